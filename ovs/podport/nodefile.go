package podport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/switchyard-proxy/switchyard/internal/atomicfile"
)

// NodeNetwork is what switchyard tells switchyard-cni about this node's pod
// network. switchyard writes it once it knows the node's pod CIDRs and
// again whenever they change.
type NodeNetwork struct {
	Node string `json:"node"`
	// PodCIDRs are the node's spec.podCIDRs, one per family; Gateways the
	// pods' default gateway in each (its first address), in the same order.
	PodCIDRs []netip.Prefix `json:"podCIDRs"`
	Gateways []netip.Addr   `json:"gateways"`
	// MTU of the pods' interfaces.
	MTU int `json:"mtu"`
	// TxChecksumOffload false turns TX checksum offload off on both ends of
	// a pod's veth: OVS's userspace datapath reads veths as raw sockets and
	// would see unfinished checksums.
	TxChecksumOffload bool `json:"txChecksumOffload"`
}

// Validate checks what the plugin relies on.
func (n NodeNetwork) Validate() error {
	if len(n.PodCIDRs) != len(n.Gateways) {
		return fmt.Errorf("%d pod CIDRs but %d gateways", len(n.PodCIDRs), len(n.Gateways))
	}
	for i, p := range n.PodCIDRs {
		if !p.IsValid() || !p.Contains(n.Gateways[i]) {
			return fmt.Errorf("gateway %s is not in pod CIDR %s", n.Gateways[i], p)
		}
	}
	if n.MTU != 0 && (n.MTU < 576 || n.MTU > 65535) {
		return fmt.Errorf("MTU %d out of range", n.MTU)
	}
	return nil
}

// ErrNoNodeFile is returned by ReadNodeNetwork when switchyard has not
// written the file (yet).
var ErrNoNodeFile = errors.New("switchyard has not written the node's network yet")

// ReadNodeNetwork reads the node file.
func ReadNodeNetwork(path string) (NodeNetwork, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return NodeNetwork{}, fmt.Errorf("%w (%s is missing: is switchyard running on this node?)", ErrNoNodeFile, path)
	}
	if err != nil {
		return NodeNetwork{}, err
	}
	var n NodeNetwork
	if err := json.Unmarshal(b, &n); err != nil {
		return NodeNetwork{}, fmt.Errorf("node file %s: %w", path, err)
	}
	if err := n.Validate(); err != nil {
		return NodeNetwork{}, fmt.Errorf("node file %s: %w", path, err)
	}
	return n, nil
}

// WriteNodeNetwork writes the node file atomically (a reader sees the old
// or the new content, never a part). Writing what is already there does
// nothing.
func WriteNodeNetwork(path string, n NodeNetwork) error {
	if err := n.Validate(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if old, err := os.ReadFile(path); err == nil && string(old) == string(b) {
		return nil
	}
	return atomicfile.Write(path, bytes.NewReader(b), 0o644)
}
