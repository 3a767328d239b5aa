package pipeline

import (
	"slices"
	"strconv"

	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// Trees keeps a service port's trees (groups.go) from one rendering to
// the next, by slot, so that a change of a few endpoints of a long list
// redoes only the leaves they fall in and the groups above them: the
// endpoints the list lost and gained are found from the parts the two
// versions of the list do not share (graph.EndpointList.Changes), so the
// rest of a 50 000-endpoint list is neither hashed nor looked at. The
// result is the tree a fresh rendering makes (TestTreesMatchAFreshBuild);
// when a change would reshape the tree (a leaf outgrowing leafMax, a
// node's fanout changing) it is made anew. The driver keeps one per
// service port; not safe for concurrent use.
type Trees struct {
	bySlot map[string]*keptTree
	used   map[string]bool
}

// keptTree is a slot's tree and what it was made of.
type keptTree struct {
	list     graph.EndpointList
	id       uint32
	zone     uint16
	affinity bool
	fields   []of.HashField
	root     *treeNode
}

// Empty reports whether ts keeps no tree (the zero Trees is empty and
// ready to use; a port without long lists need not keep one).
func (ts *Trees) Empty() bool { return len(ts.bySlot) == 0 }

// sweep forgets the trees the last rendering did not use.
func (ts *Trees) sweep() {
	for slot := range ts.bySlot {
		if !ts.used[slot] {
			delete(ts.bySlot, slot)
		}
	}
	clear(ts.used)
}

// treeFor is the tree of eps at slot: the kept one brought up to date,
// or a new one.
func (m groupMaker) treeFor(id uint32, slot string, eps graph.EndpointList) *treeNode {
	if m.trees == nil {
		return m.buildTree(id, slot, eps)
	}
	if m.trees.bySlot == nil {
		m.trees.bySlot, m.trees.used = map[string]*keptTree{}, map[string]bool{}
	}
	m.trees.used[slot] = true
	k := m.trees.bySlot[slot]
	if k != nil && k.id == id && k.zone == m.zone && k.affinity == m.affinity && slices.Equal(k.fields, m.fields) && m.update(k.root, k.list, eps) {
		k.list = eps
		return k.root
	}
	k = &keptTree{list: eps, id: id, zone: m.zone, affinity: m.affinity, fields: m.fields, root: m.buildTree(id, slot, eps)}
	m.trees.bySlot[slot] = k
	return k.root
}

// update brings root, the tree of old, to the tree of new in place; false
// when the change would reshape it (then root is spoilt: make it anew).
func (m groupMaker) update(root *treeNode, old, new graph.EndpointList) bool {
	removed, added := new.Changes(old)
	if len(removed)+len(added) > new.Len()/8+8 || fanoutFor(new.Len()) != len(root.children) {
		return false
	}
	for i := range removed {
		if !m.place(root, &removed[i], -1) {
			return false
		}
	}
	for i := range added {
		if !m.place(root, &added[i], 1) {
			return false
		}
	}
	return true
}

// place takes e out of (d -1) or puts it into (d 1) its leaf under n,
// marking every group on the way to be rendered again.
func (m groupMaker) place(n *treeNode, e *graph.Endpoint, d int) bool {
	h := endpointHash(e)
	for {
		n.group = nil
		n.size += d
		if fanoutFor(n.size) != len(n.children) || n.size <= leafMax && n.shift > 0 {
			return false // this node's shape would change
		}
		c := h >> n.shift & uint64(len(n.children)-1)
		child := n.children[c]
		if child == nil {
			if d < 0 {
				return false
			}
			cslot := n.slot + "/" + strconv.Itoa(int(c))
			n.children[c] = &treeNode{id: m.ids(cslot), slot: cslot, size: 1, eps: []graph.Endpoint{*e}, hashes: []uint64{h}}
			return true
		}
		if !child.isLeaf() {
			n = child
			continue
		}
		return placeInLeaf(n, int(c), e, h, d)
	}
}

// placeInLeaf takes e out of, or puts it into, n's leaf child c: new
// arrays (the last rendering's group still reads the old ones).
func placeInLeaf(n *treeNode, c int, e *graph.Endpoint, h uint64, d int) bool {
	leaf := n.children[c]
	i, found := slices.BinarySearchFunc(leaf.eps, *e, graph.CompareEndpoints)
	switch {
	case d < 0 && (!found || leaf.eps[i] != *e), d > 0 && found, d > 0 && len(leaf.eps) == leafMax:
		return false
	case d < 0 && len(leaf.eps) == 1:
		n.children[c] = nil
		return true
	}
	eps := make([]graph.Endpoint, 0, len(leaf.eps)+d)
	hashes := make([]uint64, 0, len(leaf.eps)+d)
	if d < 0 {
		eps = append(append(eps, leaf.eps[:i]...), leaf.eps[i+1:]...)
		hashes = append(append(hashes, leaf.hashes[:i]...), leaf.hashes[i+1:]...)
	} else {
		eps = append(append(append(eps, leaf.eps[:i]...), *e), leaf.eps[i:]...)
		hashes = append(append(append(hashes, leaf.hashes[:i]...), h), leaf.hashes[i:]...)
	}
	n.children[c] = &treeNode{id: leaf.id, slot: leaf.slot, size: len(eps), eps: eps, hashes: hashes}
	return true
}
