package engine

import "hash/fnv"

// groupAllocator gives each (owner, slot) a group ID from the driver's
// range: the upper half of the 32-bit space below OpenFlow's reserved IDs
// (other controllers count up from 1). The ID is a hash of the owner and
// slot, probed on Collision, so a restarted driver computes the same IDs
// and the flows naming them keep their cookies: nothing is re-added. (Only
// two slots whose hashes collide may swap after a restart; with 60 000
// groups about one such pair is expected.)
type groupAllocator struct {
	owners map[OwnerKey][]slotID // an owner's slots (a service port has a few)
	// indexed holds the slots of owners that have more than indexFrom
	// (a service port whose endpoints are a tree of groups has hundreds).
	indexed map[OwnerKey]map[string]uint32
	used    map[uint32]struct{}
}

// indexFrom is the number of slots from which an owner's are indexed.
const indexFrom = 8

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
	return &groupAllocator{owners: map[OwnerKey][]slotID{}, indexed: map[OwnerKey]map[string]uint32{}, used: map[uint32]struct{}{}}
}

func (a *groupAllocator) owns(id uint32) bool { return id >= groupFirst && id <= groupLast }

// id returns the group ID of an owner's slot, choosing it on first use.
func (a *groupAllocator) id(owner OwnerKey, slot string) uint32 {
	if index := a.indexed[owner]; index != nil {
		if id, ok := index[slot]; ok {
			return id
		}
	} else {
		for _, s := range a.owners[owner] {
			if s.slot == slot {
				return s.id
			}
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
	if index := a.indexed[owner]; index != nil {
		index[slot] = id
	} else {
		a.reindex(owner)
	}
	return id
}

// reindex makes the index of an owner's slots when it has many, and
// drops it when it has few.
func (a *groupAllocator) reindex(owner OwnerKey) {
	slots := a.owners[owner]
	if len(slots) <= indexFrom {
		delete(a.indexed, owner)
		return
	}
	index := make(map[string]uint32, len(slots))
	for _, s := range slots {
		index[s.slot] = s.id
	}
	a.indexed[owner] = index
}

// keepOnly frees an owner's slots whose IDs are not in keep.
func (a *groupAllocator) keepOnly(owner OwnerKey, keep map[uint32]bool) {
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
	if len(a.indexed[owner]) != len(kept) {
		a.reindex(owner)
	}
}
