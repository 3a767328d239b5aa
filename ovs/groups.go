package ovs

// groupAllocator hands out group IDs from the driver's own range
// [base, base+groupRange): one per (owner, slot), kept for as long as the
// slot exists. At start-up, groups found installed are offered for
// adoption by content, so an unchanged service keeps its group (and the
// flows that name it) across a restart.
type groupAllocator struct {
	base   uint32
	next   uint32
	free   []uint32
	owners map[string]map[string]uint32 // owner -> slot -> id
	used   map[uint32]bool
	// installed groups nobody claimed yet, by content signature and by ID
	adoptable   map[string][]uint32
	adoptableID map[uint32]bool
}

// groupRange is the size of the driver's group ID range.
const groupRange = 1 << 24

func newGroupAllocator(base uint32) *groupAllocator {
	return &groupAllocator{base: base, owners: map[string]map[string]uint32{}, used: map[uint32]bool{},
		adoptable: map[string][]uint32{}, adoptableID: map[uint32]bool{}}
}

func (a *groupAllocator) owns(id uint32) bool { return id >= a.base && id-a.base < groupRange }

// offer makes an installed group available for adoption.
func (a *groupAllocator) offer(id uint32, sig string) {
	if !a.used[id] && a.owns(id) && !a.adoptableID[id] {
		a.adoptable[sig] = append(a.adoptable[sig], id)
		a.adoptableID[id] = true
	}
}

// id returns the group ID of an owner's slot, allocating (or adopting an
// installed group with the same content) on first use.
func (a *groupAllocator) id(owner, slot, sig string) uint32 {
	if id, ok := a.owners[owner][slot]; ok {
		return id
	}
	var id uint32
	if c := a.adoptable[sig]; len(c) > 0 {
		id, a.adoptable[sig] = c[0], c[1:]
		delete(a.adoptableID, id)
	} else {
		id = a.fresh()
	}
	if a.owners[owner] == nil {
		a.owners[owner] = map[string]uint32{}
	}
	a.owners[owner][slot] = id
	a.used[id] = true
	return id
}

func (a *groupAllocator) fresh() uint32 {
	for len(a.free) > 0 {
		id := a.free[len(a.free)-1]
		a.free = a.free[:len(a.free)-1]
		if !a.used[id] && !a.adoptableID[id] {
			return id
		}
	}
	for {
		id := a.base + a.next
		a.next = (a.next + 1) % groupRange
		if !a.used[id] && !a.adoptableID[id] {
			return id
		}
	}
}

// keepOnly frees an owner's slots whose IDs are not in keep.
func (a *groupAllocator) keepOnly(owner string, keep map[uint32]bool) {
	for slot, id := range a.owners[owner] {
		if !keep[id] {
			delete(a.owners[owner], slot)
			delete(a.used, id)
			a.free = append(a.free, id)
		}
	}
	if len(a.owners[owner]) == 0 {
		delete(a.owners, owner)
	}
}

// endAdoption forgets installed groups nobody claimed (they are deleted).
func (a *groupAllocator) endAdoption() {
	a.adoptable = map[string][]uint32{}
	a.adoptableID = map[uint32]bool{}
}
