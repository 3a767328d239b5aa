// Package hostnettest is an in-memory host for the OVS driver's tests
// without root: it holds what ovs/hostnet.Host would put on the node (the
// configuration, the routes it derives from the frontends and captured
// ports, the NodePorts) and is as strict as Host where the driver could
// get it wrong: an incremental Update needs a Sync before it, and a
// frontend withdrawn must have been routed.
package hostnettest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"

	"github.com/switchyard-proxy/switchyard/ovs/hostnet"
)

// Fake is the in-memory host. Its zero value is a node with nothing of
// the driver's on it.
type Fake struct {
	mu        sync.Mutex
	synced    bool
	cfg       hostnet.Config
	frontends map[netip.Addr]bool
	captures  []hostnet.Capture
	nodePorts []hostnet.ProtoPort
}

// State is what the host holds, as a test compares it.
type State struct {
	Config    hostnet.Config
	Routes    map[netip.Prefix]hostnet.Route
	NodePorts []hostnet.ProtoPort
}

// State returns what the host holds now.
func (f *Fake) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.synced {
		return State{}
	}
	return State{Config: f.cfg, Routes: f.cfg.Routes(slices.SortedFunc(maps.Keys(f.frontends), netip.Addr.Compare), f.captures), NodePorts: slices.Clone(f.nodePorts)}
}

// Sync implements the driver's host: the host holds exactly this.
func (f *Fake) Sync(_ context.Context, c hostnet.Config, frontends []netip.Addr, captures []hostnet.Capture, nodePorts []hostnet.ProtoPort) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.synced, f.cfg = true, c
	f.frontends = map[netip.Addr]bool{}
	for _, ip := range frontends {
		f.frontends[ip] = true
	}
	f.captures, f.nodePorts = slices.Clone(captures), slices.Clone(nodePorts)
	return nil
}

// Audit implements the driver's host: as Sync (this host never drifts,
// so whether the table would be rewritten makes no difference here).
func (f *Fake) Audit(ctx context.Context, c hostnet.Config, frontends []netip.Addr, captures []hostnet.Capture, nodePorts []hostnet.ProtoPort) error {
	return f.Sync(ctx, c, frontends, captures, nodePorts)
}

// Update implements the driver's host: a change on top of the last Sync
// (a changed configuration is a whole Sync, as Host does).
func (f *Fake) Update(ctx context.Context, c hostnet.Config, frontends map[netip.Addr]bool, all func() ([]netip.Addr, []hostnet.Capture), captures []hostnet.Capture, nodePorts []hostnet.ProtoPort) error {
	f.mu.Lock()
	if !f.synced {
		f.mu.Unlock()
		return errors.New("hostnettest: Update before any Sync: the host holds nothing to update")
	}
	if !f.cfg.Equal(c) {
		np := nodePorts
		if np == nil {
			np = f.nodePorts
		}
		f.mu.Unlock()
		whole, caps := all()
		return f.Sync(ctx, c, whole, caps, np)
	}
	defer f.mu.Unlock()
	for ip, add := range frontends {
		if !add && !f.frontends[ip] {
			return fmt.Errorf("hostnettest: frontend %s withdrawn but never routed", ip)
		}
		if add {
			f.frontends[ip] = true
		} else {
			delete(f.frontends, ip)
		}
	}
	if captures != nil {
		f.captures = slices.Clone(captures)
	}
	if nodePorts != nil {
		f.nodePorts = slices.Clone(nodePorts)
	}
	return nil
}

// Cleanup implements the driver's host: nothing of the driver's is left.
func (f *Fake) Cleanup(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.synced, f.cfg, f.frontends, f.captures, f.nodePorts = false, hostnet.Config{}, nil, nil, nil
	return nil
}

// DeleteLink implements the driver's host; a link that is not there is no
// error, as with Host.
func (f *Fake) DeleteLink(string) error { return nil }

// Unroutable implements the driver's host: every peer is on link here.
func (f *Fake) Unroutable() []hostnet.Route { return nil }

// LinkMTU implements the driver's host: no link is known, so the
// driver keeps its configured MTU.
func (f *Fake) LinkMTU(netip.Addr) (int, bool) { return 0, false }

// Close implements the driver's host.
func (f *Fake) Close() {}
