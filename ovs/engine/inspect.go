package engine

import (
	"maps"
	"slices"

	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// What the state can tell about itself without changing: what is desired,
// who owns what, what stays rendered. The driver's reports read it, and
// so do tests that check the bridge holds what the state wants.

// DesiredFlows lists the cookies of the desired flows, sorted, and
// DesiredGroups the IDs of the desired groups.
func (s *State) DesiredFlows() []uint64  { return slices.Sorted(maps.Keys(s.flows)) }
func (s *State) DesiredGroups() []uint32 { return slices.Sorted(maps.Keys(s.groups)) }

// IsShadowed reports whether a desired flow is left out because another
// with its match is installed (Shadowed lists them).
func (s *State) IsShadowed(cookie uint64) bool { return s.shadowed[cookie] != 0 }

// Owned lists an owner's flows (by cookie) and groups (by ID).
func (s *State) Owned(o OwnerKey) (cookies []uint64, groups []uint32) {
	if x := s.owners[o]; x != nil {
		return slices.Clone(x.flows), slices.Clone(x.groups)
	}
	return nil, nil
}

// Retained counts the committed flows and groups the state still keeps
// rendered, and of those the ones it need not keep: their owner renders
// them again (rerender.go).
func (s *State) Retained() (flows, groups, needless int) {
	for _, e := range s.flows {
		if e.flow != nil {
			flows++
			if s.rendersAgain(e.owner) {
				needless++
			}
		}
	}
	for _, e := range s.groups {
		if e.group != nil {
			groups++
			if s.rendersAgain(e.owner) {
				needless++
			}
		}
	}
	return flows, groups, needless
}

// ForceCookies makes the model give flows the cookies cookieOf returns
// (default: (*of.Flow).Cookie) and sets its static flows again with them:
// for tests that need two flows with one cookie, a 44-bit hash collision
// too rare to meet otherwise. Call it before anything else is set.
func (m *Model) ForceCookies(cookieOf func(*of.Flow) uint64) {
	m.st.cookieOf = cookieOf
	m.RefreshAll()
}
