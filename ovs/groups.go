package ovs

import "hash/fnv"

// groupAllocator gives each (owner, slot) a group ID from the driver's
// range: the upper half of the 32-bit space below OpenFlow's reserved IDs
// (other controllers count up from 1). The ID is a hash of the owner and
// slot, probed on collision, so a restarted driver computes the same IDs
// and the flows naming them keep their cookies: nothing is re-added. (Only
// two slots whose hashes collide may swap after a restart; with 60 000
// groups about one such pair is expected.)
type groupAllocator struct {
	owners map[string]map[string]uint32 // owner -> slot -> id
	used   map[uint32]bool
}

const (
	groupFirst = 0x80000000
	groupLast  = 0xfffffeff // OFPG_MAX
	groupSpan  = groupLast - groupFirst + 1
)

func newGroupAllocator() *groupAllocator {
	return &groupAllocator{owners: map[string]map[string]uint32{}, used: map[uint32]bool{}}
}

func (a *groupAllocator) owns(id uint32) bool { return id >= groupFirst && id <= groupLast }

// id returns the group ID of an owner's slot, choosing it on first use.
func (a *groupAllocator) id(owner, slot string) uint32 {
	if id, ok := a.owners[owner][slot]; ok {
		return id
	}
	h := fnv.New64a()
	h.Write([]byte(owner))
	h.Write([]byte{0})
	h.Write([]byte(slot))
	x := h.Sum64()
	step := x>>32 | 1
	var id uint32
	for i := uint64(0); ; i++ {
		id = groupFirst + uint32((x+i*step)%groupSpan)
		if !a.used[id] {
			break
		}
	}
	if a.owners[owner] == nil {
		a.owners[owner] = map[string]uint32{}
	}
	a.owners[owner][slot] = id
	a.used[id] = true
	return id
}

// keepOnly frees an owner's slots whose IDs are not in keep.
func (a *groupAllocator) keepOnly(owner string, keep map[uint32]bool) {
	for slot, id := range a.owners[owner] {
		if !keep[id] {
			delete(a.owners[owner], slot)
			delete(a.used, id)
		}
	}
	if len(a.owners[owner]) == 0 {
		delete(a.owners, owner)
	}
}
