package engine

import (
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// Adopt replaces the installed view with what a dump found (flows by
// cookie, groups by their buckets' IDs), and marks for comparison what
// differs from what is wanted: an unchanged flow or group is left alone,
// and a resync with nothing to repair costs no more than the comparison.
// It returns how many flows and groups the dump found other than the
// view it replaces held (drift).
func (s *State) Adopt(flows []ofconn.FlowInfo, groups []ofconn.GroupInfo) (flowDrift, groupDrift int) {
	oldFlows, oldGroups := s.installedFlows, s.installedGroups
	s.installedFlows = make(map[uint64]bool, len(flows))
	for _, f := range flows {
		if f.Cookie&of.CookieTagMask == of.CookieTag && !of.IsLearnedCookie(f.Cookie) {
			s.installedFlows[f.Cookie] = true
		}
	}
	flowDrift = symmetricDifference(oldFlows, s.installedFlows)
	// A desired flow belongs in OVS unless another with its match is
	// installed in its place (shadowed).
	wanted := func(c uint64) bool { return s.flows[c] != nil && s.shadowed[c] == 0 }
	for c := range s.installedFlows {
		if !wanted(c) {
			s.touchedFlows[c] = true
		}
	}
	for c := range s.flows {
		if wanted(c) != s.installedFlows[c] {
			s.touchedFlows[c] = true
		}
	}
	s.installedGroups = make(map[uint32]uint64, len(groups))
	for _, g := range groups {
		if s.alloc.owns(g.ID) {
			sig := groupSignature(g.BucketIDs)
			s.installedGroups[g.ID] = sig
			if e := s.groups[g.ID]; e == nil || e.sig != sig {
				s.touchedGroups[g.ID] = true
			}
		}
	}
	for id := range s.groups {
		if _, ok := s.installedGroups[id]; !ok {
			s.touchedGroups[id] = true
		}
	}
	return flowDrift, symmetricDifference(oldGroups, s.installedGroups)
}

// symmetricDifference counts the keys in one map but not the other, and
// those in both whose values differ.
func symmetricDifference[K, V comparable](a, b map[K]V) int {
	n := 0
	for k, va := range a {
		if vb, ok := b[k]; !ok || va != vb {
			n++
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			n++
		}
	}
	return n
}
