//go:build linux

package hostnet

import (
	"context"
	"net/netip"
	"slices"
	"time"
)

// TableRewritePeriod is how often the periodic audit rewrites the
// nftables table whole while it holds what this Host last wrote: an hour,
// kube-proxy's full sync period in its nftables and iptables modes
// (pkg/proxy/util.FullSyncPeriod), which between two full syncs changes
// only what changed too.
const TableRewritePeriod = time.Hour

// Audit brings the host to the configuration, frontends, captured ports
// and NodePorts, for the driver's periodic audit: the routes are read back
// and fixed as Sync does; the nftables table is rewritten whole only when
// it may not hold them: what they call for is not what this Host last
// wrote (Sync, or Update since), one of the table's sets or chains is
// missing (their names, listed over netlink without their elements), or
// its last rewrite is TableRewritePeriod old. Otherwise drift inside a set
// or a chain waits for that rewrite, as in kube-proxy; the rewrite of
// 12 000 NodePorts is ~0.1 s of nft's CPU on each audit otherwise, and
// nft's own listing reads every element too (docs/scale.md).
func (h *Host) Audit(ctx context.Context, c Config, frontends []netip.Addr, captures []Capture, nodePorts []ProtoPort) error {
	if err := h.syncRoutes(c, frontends, captures); err != nil {
		return err
	}
	if h.tableHolds(ctx, c, nodePorts, captures) {
		return nil
	}
	return h.writeTable(ctx, c, nodePorts, captures)
}

// tableHolds reports whether the table holds what c, nodePorts and
// captures call for, as far as the audit checks between two rewrites.
func (h *Host) tableHolds(ctx context.Context, c Config, nodePorts []ProtoPort, captures []Capture) bool {
	if h.applied == nil || !h.applied.Equal(c) || !sameElements(h.nodePorts, nodePorts) || !sameElements(h.captures, captures) {
		return false
	}
	if h.clock().Sub(h.written) >= TableRewritePeriod {
		return false
	}
	var objects map[string][]string
	err := h.inNS(func() (err error) {
		objects, err = h.nft.ListAll(ctx)
		return err
	})
	if err != nil {
		return false // not known: rewritten
	}
	for _, s := range tableSets() {
		if !slices.Contains(objects["set"], s.Name) {
			return false
		}
	}
	for _, ch := range tableChains() {
		if !slices.Contains(objects["chain"], ch.Name) {
			return false
		}
	}
	return true
}

// clock is the time now.
func (h *Host) clock() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}

// sameElements reports whether a and b hold the same elements, in any
// order. Both are sorted alike when they come from the model (its List
// methods, an audit's sorted copy): then nothing is allocated, as at each
// audit of 30 000 NodePorts the counts were ~2.4 MB of garbage.
func sameElements[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	if slices.Equal(a, b) {
		return true
	}
	count := make(map[T]int, len(a))
	for _, e := range a {
		count[e]++
	}
	for _, e := range b {
		if count[e]--; count[e] < 0 {
			return false
		}
	}
	return true
}
