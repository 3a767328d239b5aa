package cni

import "github.com/containernetworking/cni/pkg/types"

// Error codes the plugin returns beyond the CNI spec's well-known ones
// (the spec leaves 100 and up to plugins).
const (
	// ErrNoFreeAddress: the node's pod CIDR has no free address left.
	ErrNoFreeAddress uint = 100
	// ErrAddressTaken: a requested address is already another pod's, or
	// outside the node's pod CIDRs.
	ErrAddressTaken uint = 101
)

// failure is an error with its CNI code; skel prints it as the JSON error
// result: msg says what failed, details why (runtimes log "msg; details").
func failure(code uint, msg string, err error) *types.Error {
	details := ""
	if err != nil {
		details = err.Error()
	}
	return types.NewError(code, msg, details)
}
