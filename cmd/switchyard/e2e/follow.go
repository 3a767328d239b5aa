//go:build linux

package e2e

import (
	"net/netip"

	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/conformance/ovsharness"
)

// Checks of what traffic does now, each made of real connections in the
// conformance world.

func probe(w *ovsharness.World, from string, dst netip.AddrPort) conformance.Answer {
	return w.Probe(conformance.Probe{From: from, Dst: dst, Protocol: "TCP"})
}

// reaches: one connection is answered by id.
func reaches(w *ovsharness.World, from string, dst netip.AddrPort, id string) bool {
	a := probe(w, from, dst)
	return a.Outcome == conformance.Answered && a.Identity == id
}

// seesAll: within n connections, every id answers, and nobody else.
func seesAll(w *ovsharness.World, from string, dst netip.AddrPort, n int, ids ...string) bool {
	seen := map[string]bool{}
	for range n {
		a := probe(w, from, dst)
		if a.Outcome != conformance.Answered {
			return false
		}
		seen[a.Identity] = true
	}
	for _, id := range ids {
		if !seen[id] {
			return false
		}
	}
	return len(seen) == len(ids)
}

// never: n connections in a row are answered, none by id.
func never(w *ovsharness.World, from string, dst netip.AddrPort, n int, id string) bool {
	for range n {
		a := probe(w, from, dst)
		if a.Outcome != conformance.Answered || a.Identity == id {
			return false
		}
	}
	return true
}

// unreached: a connection is answered by no backend.
func unreached(w *ovsharness.World, from string, dst netip.AddrPort) bool {
	return probe(w, from, dst).Outcome != conformance.Answered
}
