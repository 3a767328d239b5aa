package engine

import "slices"

// identityIndex indexes the desired flows by identity (table, priority,
// match). Two desired flows with one identity (two Services claiming one
// frontend, which only a file source lets through) cannot both be in OVS:
// the one with the lower cookie is installed, the other is shadowed and
// reported, so the choice is stable across resyncs instead of the later
// add replacing the earlier one every time. Nearly every identity has one
// flow: it is kept as a cookie, and only identities with several get a
// list (a list for each cost memory for nothing: docs/scale.md).
type identityIndex struct {
	one  map[uint64]uint64   // identity -> its only flow's cookie
	many map[uint64][]uint64 // identity -> its flows' cookies, when several
}

func newIdentityIndex() identityIndex {
	return identityIndex{one: map[uint64]uint64{}, many: map[uint64][]uint64{}}
}

func (x identityIndex) add(id, c uint64) {
	if list, ok := x.many[id]; ok {
		x.many[id] = append(list, c)
		return
	}
	if first, ok := x.one[id]; ok {
		delete(x.one, id)
		x.many[id] = []uint64{first, c}
		return
	}
	x.one[id] = c
}

// remove drops c from id's flows and reports whether others remain.
func (x identityIndex) remove(id, c uint64) bool {
	list, ok := x.many[id]
	if !ok {
		delete(x.one, id)
		return false
	}
	list = slices.DeleteFunc(list, func(o uint64) bool { return o == c })
	if len(list) == 1 {
		delete(x.many, id)
		x.one[id] = list[0]
	} else {
		x.many[id] = list
	}
	return true
}

// each calls fn with every flow of an identity.
func (x identityIndex) each(id uint64, fn func(c uint64)) {
	if list, ok := x.many[id]; ok {
		for _, c := range list {
			fn(c)
		}
	} else if c, ok := x.one[id]; ok {
		fn(c)
	}
}

// winner is the flow installed for an identity: the lowest cookie.
func (x identityIndex) winner(id uint64) uint64 {
	if list, ok := x.many[id]; ok {
		return slices.Min(list)
	}
	return x.one[id]
}
