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
// view it replaces held (drift). An audit under way is dropped: what it
// reads is older than this.
func (s *State) Adopt(flows []ofconn.FlowInfo, groups []ofconn.GroupInfo) (flowDrift, groupDrift int) {
	s.audit = nil
	return s.adopt(s.readFlows(flows), s.readGroups(groups))
}

// adopt makes the read view the installed one and marks what differs
// from what is wanted.
func (s *State) adopt(flows map[uint64]bool, groups map[uint32]uint64) (flowDrift, groupDrift int) {
	flowDrift = symmetricDifference(s.installedFlows, flows)
	groupDrift = symmetricDifference(s.installedGroups, groups)
	s.installedFlows, s.installedGroups = flows, groups
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
	for id, sig := range s.installedGroups {
		if e := s.groups[id]; e == nil || e.sig != sig {
			s.touchedGroups[id] = true
		}
	}
	for id := range s.groups {
		if _, ok := s.installedGroups[id]; !ok {
			s.touchedGroups[id] = true
		}
	}
	return flowDrift, groupDrift
}

// readFlows is the installed view of a dump's flows: those of the
// driver's, learned ones left out.
func (s *State) readFlows(flows []ofconn.FlowInfo) map[uint64]bool {
	m := make(map[uint64]bool, len(flows))
	for _, f := range flows {
		if f.Cookie&of.CookieTagMask == of.CookieTag && !of.IsLearnedCookie(f.Cookie) {
			m[f.Cookie] = true
		}
	}
	return m
}

// readGroups is the installed view of a dump's groups: those in the
// driver's range, by the signature of their buckets' IDs.
func (s *State) readGroups(groups []ofconn.GroupInfo) map[uint32]uint64 {
	m := make(map[uint32]uint64, len(groups))
	for _, g := range groups {
		if s.alloc.owns(g.ID) {
			m[g.ID] = groupSignature(g.BucketIDs)
		}
	}
	return m
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
