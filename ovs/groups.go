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
	owners map[string][]slotID // an owner's slots (a service port has a few)
	used   map[uint32]struct{}
}

type slotID struct {
	slot string
	id   uint32
}

const (
	groupFirst = 0x80000000
	groupLast  = 0xfffffeff // OFPG_MAX
	groupSpan  = groupLast - groupFirst + 1
)

func newGroupAllocator() *groupAllocator {
	return &groupAllocator{owners: map[string][]slotID{}, used: map[uint32]struct{}{}}
}

func (a *groupAllocator) owns(id uint32) bool { return id >= groupFirst && id <= groupLast }

// id returns the group ID of an owner's slot, choosing it on first use.
func (a *groupAllocator) id(owner, slot string) uint32 {
	for _, s := range a.owners[owner] {
		if s.slot == slot {
			return s.id
		}
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
		if _, taken := a.used[id]; !taken {
			break
		}
	}
	a.owners[owner] = append(a.owners[owner], slotID{slot, id})
	a.used[id] = struct{}{}
	return id
}

// keepOnly frees an owner's slots whose IDs are not in keep.
func (a *groupAllocator) keepOnly(owner string, keep map[uint32]bool) {
	kept := a.owners[owner][:0]
	for _, s := range a.owners[owner] {
		if keep[s.id] {
			kept = append(kept, s)
		} else {
			delete(a.used, s.id)
		}
	}
	if len(kept) == 0 {
		delete(a.owners, owner)
	} else {
		a.owners[owner] = kept
	}
}
