//go:build !linux

package hostnet

import (
	"context"
	"errors"
	"net/netip"
)

var errNotLinux = errors.New("the OVS dataplane's node network needs Linux")

// ErrNoGateway: see the Linux implementation.
var ErrNoGateway = errors.New("gateway interface not there yet")

// Host is not available outside Linux.
type Host struct{}

// Open fails outside Linux.
func Open(string) (*Host, error) { return nil, errNotLinux }

// Close does nothing.
func (h *Host) Close() {}

// Sync fails outside Linux.
func (h *Host) Sync(context.Context, Config, []netip.Addr, []Capture, []ProtoPort) error {
	return errNotLinux
}

// Audit fails outside Linux.
func (h *Host) Audit(context.Context, Config, []netip.Addr, []Capture, []ProtoPort) error {
	return errNotLinux
}

// Update fails outside Linux.
func (h *Host) Update(context.Context, Config, map[netip.Addr]bool, func() ([]netip.Addr, []Capture), []Capture, []ProtoPort) error {
	return errNotLinux
}

// Cleanup fails outside Linux.
func (h *Host) Cleanup(context.Context) error { return errNotLinux }

// LinkMTU knows nothing outside Linux.
func (h *Host) LinkMTU(netip.Addr) (int, bool) { return 0, false }

// Unroutable knows nothing outside Linux.
func (h *Host) Unroutable() []Route { return nil }

// DeleteLink fails outside Linux.
func (h *Host) DeleteLink(string) error { return errNotLinux }
