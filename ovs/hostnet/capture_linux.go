//go:build linux

package hostnet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Capture by port (see CaptureTable): the rules that send marked packets
// to CaptureTable, the routes there, and the marks the nftables table sets
// (nft_linux.go).

// tableOf is a route's kernel table.
func tableOf(r Route) int {
	if r.Table == 0 {
		return unix.RT_TABLE_MAIN
	}
	return r.Table
}

// captureRule is the rule of one family.
func captureRule(family int) *netlink.Rule {
	r := netlink.NewRule()
	r.Family, r.Table, r.Priority = family, CaptureTable, CaptureRulePriority
	mask := uint32(CaptureMark)
	r.Mark, r.Mask = CaptureMark, &mask
	return r
}

func familyOf(fam graph.IPFamily) int {
	if fam == graph.IPv6 {
		return netlink.FAMILY_V6
	}
	return netlink.FAMILY_V4
}

// captureRouting makes the rules exist for the families with pods, and
// lets the gateway's reverse-path check see the marks: a reply to a
// captured connection comes back through the gateway from an address
// whose unmarked route leads elsewhere, and a strict rp_filter would
// drop it (the table restores its connection's mark first).
func (h *Host) captureRouting(c Config) error {
	for _, fam := range c.Families().List() {
		want := captureRule(familyOf(fam))
		have, err := h.nl.RuleListFiltered(want.Family, want, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PRIORITY|netlink.RT_FILTER_MARK)
		if err != nil {
			return fmt.Errorf("listing ip rules: %w", err)
		}
		if len(have) == 0 {
			if err := h.nl.RuleAdd(want); err != nil && !errors.Is(err, unix.EEXIST) {
				return fmt.Errorf("ip rule fwmark %#x lookup %d: %w", CaptureMark, CaptureTable, err)
			}
		}
	}
	if c.Families().Has(graph.IPv4) {
		return h.inNS(func() error { return setSysctl("net/ipv4/conf/"+c.Gateway+"/src_valid_mark", "1") })
	}
	return nil
}

// removeCaptureRules removes the rules of both families (Cleanup).
func (h *Host) removeCaptureRules() error {
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		want := captureRule(fam)
		have, err := h.nl.RuleListFiltered(fam, want, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PRIORITY|netlink.RT_FILTER_MARK)
		if err != nil {
			return fmt.Errorf("listing ip rules: %w", err)
		}
		for i := range have {
			if err := h.nl.RuleDel(&have[i]); err != nil && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("removing ip rule: %w", err)
			}
		}
	}
	return nil
}

// updateCaptures brings the captured ports to captures: the routes in
// CaptureTable, then the nftables sets that mark their packets.
// What the main table routes whole is what is installed there: the
// frontends' changes of the same Update are already applied.
func (h *Host) updateCaptures(ctx context.Context, c Config, gw netlink.Link, captures []Capture) error {
	if slices.Equal(captures, h.captures) {
		return nil
	}
	inMain := make(map[netip.Prefix]Route, len(h.routes))
	for dst, r := range h.routes {
		if r.Table == 0 {
			inMain[dst] = r
		}
	}
	want := c.captureRoutes(captures, inMain)
	for dst, r := range h.routes {
		if _, ok := want[dst]; !ok && r.Table == CaptureTable {
			if err := h.delRoute(dst); err != nil {
				return err
			}
		}
	}
	for _, r := range want {
		if err := h.setRoute(gw, r); err != nil {
			return err
		}
	}
	tx := h.nft.NewTransaction()
	capturesDeltaTx(tx, h.captures, captures)
	if err := h.inNS(func() error { return h.nft.Run(ctx, tx) }); err != nil {
		return fmt.Errorf("nftables captured ports: %w", err)
	}
	h.captures = slices.Clone(captures)
	return nil
}
