package engine

import (
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// State is the driver's view of the bridge: the flows and groups it wants
// (reference-counted by owner: static, a pod, a peer, a service port) and
// the ones it believes are installed. Changes record what they touched, so
// a commit looks only at that: work proportional to the change.
type State struct {
	flows  map[uint64]*flowEntry // desired, by cookie
	groups map[uint32]*groupEntry
	owners map[OwnerKey]*owned

	installedFlows  map[uint64]bool
	installedGroups map[uint32]uint64 // id -> content signature
	// departed holds the identity (table, priority and match) of flows
	// this process installed and no longer wants, until the next commit:
	// a flow replaced by one with the same identity needs no delete.
	// (Adopted flows have no known identity.)
	departed map[uint64]uint64

	touchedFlows  map[uint64]bool
	touchedGroups map[uint32]bool
	// goneFlows and goneGroups name the owner that last wanted a flow or
	// group no one wants any more, until its removal is committed: a
	// change is held back with the owner it is of (see ownerOf).
	goneFlows  map[uint64]OwnerKey
	goneGroups map[uint32]OwnerKey

	identities identityIndex
	shadowed   map[uint64]uint64 // cookie -> the cookie installed in its place

	// collided holds flows left out because another, different flow
	// has their cookie (a 44-bit hash: with ~70k flows, about one
	// bridge in 7 000 has such a pair). Not installed, and reported.
	collided map[uint64]Collision
	// cookieOf is (*of.Flow).Cookie; tests force collisions with it.
	cookieOf func(*of.Flow) uint64

	alloc *groupAllocator

	// audit, while one is under way (BeginAudit), records what commits
	// change.
	audit *auditMarks
}

// Collision is a flow left out because a different one has its cookie.
type Collision struct {
	Owner      OwnerKey // the left-out flow's
	Lost, Kept *of.Flow
}

// flowEntry is one desired flow. Its flow is kept until it is committed;
// then, when a single owner wants it and can render what it wants again,
// only the flow's hashes stay (see rerender.go). A flow two owners want is
// kept (pinned).
type flowEntry struct {
	flow          *of.Flow
	owner         OwnerKey // the one owner that wants it; "" when pinned
	identity, sum uint64
	refs          int32
	// ours: this process installed it (its identity is the installed
	// flow's).
	ours bool
}

// groupEntry is one desired group; like a flow's, its group is kept until
// it is committed when its owner can render it again.
type groupEntry struct {
	group *of.Group
	owner OwnerKey
	sig   uint64
	// key is the group's Key when it was set (0: none): the same Key
	// again is the same buckets, and their IDs need not be worked out.
	key uint64
}

type owned struct {
	flows  []uint64
	groups []uint32
	// again renders what the owner wants again, as it was set; nil: the
	// owner's flows and groups are kept.
	again func() Rendering
}

func NewState() *State {
	return &State{
		flows:           map[uint64]*flowEntry{},
		groups:          map[uint32]*groupEntry{},
		owners:          map[OwnerKey]*owned{},
		installedFlows:  map[uint64]bool{},
		installedGroups: map[uint32]uint64{},
		departed:        map[uint64]uint64{},
		touchedFlows:    map[uint64]bool{},
		touchedGroups:   map[uint32]bool{},
		goneFlows:       map[uint64]OwnerKey{},
		goneGroups:      map[uint32]OwnerKey{},
		identities:      newIdentityIndex(),
		shadowed:        map[uint64]uint64{},
		collided:        map[uint64]Collision{},
		cookieOf:        (*of.Flow).Cookie,
		alloc:           newGroupAllocator(),
	}
}

// setOwner replaces everything an owner wants. Groups are the owner's
// alone; flows may be shared with other owners. again, if not nil,
// renders the same flows and groups again (see rerender.go).
func (s *State) setOwner(key OwnerKey, flows []*of.Flow, groups []*of.Group, again func() Rendering) {
	old := s.owners[key]
	next := &owned{again: again}
	for _, f := range flows {
		c := s.cookieOf(f)
		e := s.flows[c]
		if e != nil && (e.identity != f.Identity() || e.sum != f.Sum()) {
			s.collided[c] = Collision{Owner: key, Lost: f, Kept: s.FlowOf(c, nil)}
			continue
		}
		switch {
		case e == nil:
			e = &flowEntry{flow: f, owner: key, identity: f.Identity(), sum: f.Sum()}
			s.flows[c] = e
			s.touchedFlows[c] = true
			s.identities.add(e.identity, c)
			s.touchIdentity(e.identity)
		case e.owner != key:
			if e.flow == nil {
				e.flow = f
			}
			e.owner = "" // a second owner: pinned
		}
		e.refs++
		next.flows = append(next.flows, c)
	}
	for _, g := range groups {
		e := s.groups[g.ID]
		if e != nil && g.Key != 0 && e.key == g.Key {
			next.groups = append(next.groups, g.ID) // the same buckets
			continue
		}
		sig := groupSignature(g.BucketIDs())
		if e == nil || e.sig != sig {
			s.groups[g.ID] = &groupEntry{group: g, owner: key, sig: sig, key: g.Key}
			s.touchedGroups[g.ID] = true
		} else {
			e.key = g.Key
		}
		next.groups = append(next.groups, g.ID)
	}
	if old != nil {
		s.release(key, old, next.groups)
	}
	if len(next.flows) == 0 && len(next.groups) == 0 {
		delete(s.owners, key)
	} else {
		s.owners[key] = next
	}
}

// removeOwner drops everything an owner wanted.
func (s *State) removeOwner(key OwnerKey) {
	if old := s.owners[key]; old != nil {
		s.release(key, old, nil)
		delete(s.owners, key)
	}
}

func (s *State) release(key OwnerKey, old *owned, keepGroups []uint32) {
	for _, c := range old.flows {
		e := s.flows[c]
		e.refs--
		if e.refs == 0 {
			delete(s.flows, c)
			s.touchedFlows[c] = true
			s.goneFlows[c] = key
			if e.ours {
				s.departed[c] = e.identity
			}
			id := e.identity
			if s.identities.remove(id, c) {
				s.touchIdentity(id) // a shadowed flow may now be the one to install
			}
		}
	}
	keep := map[uint32]bool{}
	for _, id := range keepGroups {
		keep[id] = true
	}
	for _, id := range old.groups {
		if !keep[id] {
			delete(s.groups, id)
			s.touchedGroups[id] = true
			s.goneGroups[id] = key
		}
	}
}

// OwnerOf names the owner a flow (by cookie) or group change is of: the
// one that wants it, or last wanted it; "" for a flow several owners
// want, and for what a read-back found that no one here ever wanted.
func (s *State) OwnerOf(cookie uint64, group uint32, isGroup bool) OwnerKey {
	if isGroup {
		if e := s.groups[group]; e != nil {
			return e.owner
		}
		return s.goneGroups[group]
	}
	if e := s.flows[cookie]; e != nil {
		return e.owner
	}
	return s.goneFlows[cookie]
}

// All takes every owner (pending and committed for the whole state).
// All includes every owner (in Pending and Committed).
func All(OwnerKey) bool { return true }

// touchIdentity marks every desired flow of an identity for comparison.
func (s *State) touchIdentity(id uint64) {
	s.identities.each(id, func(c uint64) { s.touchedFlows[c] = true })
}

// winner is the desired flow installed for an identity: the lowest cookie.
func (s *State) winner(id uint64) uint64 { return s.identities.winner(id) }

// Shadowed lists the desired flows not installed because another with the
// same identity is, as cookie -> the installed one's cookie.
func (s *State) Shadowed() map[uint64]uint64 { return s.shadowed }

// TakeCollided returns the flows left out for a cookie Collision since
// the last call, by cookie.
func (s *State) TakeCollided() map[uint64]Collision {
	if len(s.collided) == 0 {
		return nil
	}
	c := s.collided
	s.collided = map[uint64]Collision{}
	return c
}

// groupSignature is a group's content, as its bucket IDs tell it (a
// bucket's ID is a hash of its content): a sum of their mixed values, so
// the buckets' order does not count (a select group's buckets have none).
func groupSignature(ids []uint32) uint64 {
	var sig uint64
	for _, id := range ids {
		sig += of.Mix64(uint64(id) + 0x9e3779b97f4a7c15) // splitmix64
	}
	return sig
}

// Pending builds the messages that bring the bridge to the desired state
// for everything touched that is of an owner include takes (ownerOf). A
// flow whose cookie is installed is identical; a new flow with the match
// of an old one replaces it, so the old one's delete is left out.
func (s *State) Pending(include func(owner OwnerKey) bool) *ofconn.Batch {
	b := &ofconn.Batch{}
	added := map[uint64]bool{}
	rendered := map[OwnerKey]Rendering{}
	for c := range s.touchedFlows {
		if !include(s.OwnerOf(c, 0, false)) {
			continue
		}
		e := s.flows[c]
		if e == nil {
			delete(s.shadowed, c)
			continue
		}
		if w := s.winner(e.identity); w != c {
			s.shadowed[c] = w
			continue
		}
		delete(s.shadowed, c)
		if s.installedFlows[c] {
			continue
		}
		if f := s.FlowOf(c, rendered); f != nil {
			b.FlowAdds = append(b.FlowAdds, f)
			added[e.identity] = true
		}
	}
	for c := range s.touchedFlows {
		if s.flows[c] == nil && s.installedFlows[c] && include(s.goneFlows[c]) {
			if id, ok := s.departed[c]; ok && added[id] {
				continue // the add with the same match replaces it
			}
			b.FlowDeletes = append(b.FlowDeletes, ofconn.CookieMatch{Cookie: c, Mask: ^uint64(0)})
		}
	}
	for id := range s.touchedGroups {
		if !include(s.OwnerOf(0, id, true)) {
			continue
		}
		e := s.groups[id]
		inst, installed := s.installedGroups[id]
		switch {
		case e != nil && !installed:
			if g := s.GroupOf(id, rendered); g != nil {
				b.GroupAdds = append(b.GroupAdds, g)
			}
		case e != nil && inst != e.sig:
			if g := s.GroupOf(id, rendered); g != nil {
				b.GroupModifies = append(b.GroupModifies, g)
			}
		case e == nil && installed:
			b.GroupDeletes = append(b.GroupDeletes, id)
		}
	}
	return b
}

// Committed records that the batch pending(include) built took effect;
// what include left out stays touched.
func (s *State) Committed(include func(owner OwnerKey) bool) {
	for c := range s.touchedFlows {
		if !include(s.OwnerOf(c, 0, false)) {
			continue
		}
		e := s.flows[c]
		if e != nil && s.rendersAgain(e.owner) {
			e.flow = nil
		}
		delete(s.departed, c)
		delete(s.goneFlows, c)
		delete(s.touchedFlows, c)
		if s.audit != nil {
			s.audit.flows[c] = true
		}
		if e != nil && s.shadowed[c] == 0 {
			s.installedFlows[c], e.ours = true, true
		} else {
			delete(s.installedFlows, c)
			if e != nil {
				e.ours = false
			}
		}
	}
	for id := range s.touchedGroups {
		if !include(s.OwnerOf(0, id, true)) {
			continue
		}
		if e := s.groups[id]; e != nil {
			if s.rendersAgain(e.owner) {
				e.group = nil
			}
			s.installedGroups[id] = e.sig
		} else {
			delete(s.installedGroups, id)
		}
		delete(s.goneGroups, id)
		delete(s.touchedGroups, id)
		if s.audit != nil {
			s.audit.groups[id] = true
		}
	}
	// Maps keep their size once grown (a cold sync touches everything):
	// empty ones are made anew.
	if len(s.touchedFlows) == 0 {
		s.touchedFlows, s.goneFlows = map[uint64]bool{}, map[uint64]OwnerKey{}
	}
	if len(s.touchedGroups) == 0 {
		s.touchedGroups, s.goneGroups = map[uint32]bool{}, map[uint32]OwnerKey{}
	}
}

// InstalledFlows and InstalledGroups count what the bridge holds of the
// driver's, as of the last commit or read-back.
func (s *State) InstalledFlows() int  { return len(s.installedFlows) }
func (s *State) InstalledGroups() int { return len(s.installedGroups) }

// OwnsGroup reports whether a group ID is in the driver's range.
func (s *State) OwnsGroup(id uint32) bool { return s.alloc.owns(id) }

// Has reports whether a flow (by cookie) is desired.
func (s *State) Has(cookie uint64) bool { return s.flows[cookie] != nil }
