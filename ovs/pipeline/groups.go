package pipeline

import (
	"encoding/binary"
	"hash/fnv"
	"math/bits"
	"strconv"

	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// An endpoint list becomes select groups. A group is written in one
// OpenFlow message of at most 64 KiB, ~600 buckets with their NAT, and
// read back in one group description, whose length is 16 bits too. OVS
// 3.1 can grow a group past that with insert-bucket messages, but each
// one checks the whole group for duplicate bucket IDs pair by pair
// (ofproto.c, copy_buckets_for_insert_bucket), quadratic in the group's
// size (docs/scale.md, "One large Service"), and such a group cannot be
// dumped (ovs-ofctl fails to read the description back).
//
// So a list of up to LeafSize endpoints is one group, as it always was,
// and a longer one is a tree: a group of groups whose buckets each send
// to a child group, weighted by the endpoints under it (weights.go), with
// the endpoints in leaf groups of at most leafMax. An endpoint's leaf is
// a function of its address and port (bits of a hash of them), so one
// endpoint coming or going changes its leaf and its parents' weights,
// nothing else; every group fits in one message whatever the list's
// size; and OVS's choice, which scores every bucket of a group, scores a
// few hundred per level instead of every endpoint.

const (
	// LeafSize is the longest list that is one group; a tree's children
	// hold on average at most this many endpoints.
	LeafSize = 256
	// leafMax is the most endpoints a leaf holds; a child of more is a
	// tree itself. 400 of the largest buckets (IPv6 with NAT) fit one
	// message (TestLargestGroupsFitOneMessage).
	leafMax = 400
	// maxFanout is the most children a group of groups has: 16-bit
	// weights give each child its share to about maxFanout/65535.
	maxFanout = 256
)

// groupMaker makes the groups of one service port's endpoint lists.
type groupMaker struct {
	zone     uint16
	affinity bool
	fields   []of.HashField
	ids      GroupIDs
	trees    *Trees // the port's trees from its last rendering (nil: none kept)
}

// groups returns the groups that select one of eps; the first has ID id
// and slot slot (its children's slots are under it: "IPv4/internal/5").
func (m groupMaker) groups(id uint32, slot string, eps graph.EndpointList) []*of.Group {
	if eps.Len() <= LeafSize {
		return []*of.Group{m.leaf(id, flatOf(eps), 0)}
	}
	return m.render(m.treeFor(id, slot, eps), nil)
}

// flatOf is a list's endpoints in one slice: its only part (shared,
// read-only), or a copy.
func flatOf(eps graph.EndpointList) []graph.Endpoint {
	for p := range eps.Parts() {
		if len(p) == eps.Len() {
			return p
		}
		break
	}
	return eps.Slice()
}

// treeHashes is each endpoint's endpointHash.
func treeHashes(eps graph.EndpointList) []uint64 {
	out := make([]uint64, 0, eps.Len())
	for p := range eps.Parts() {
		for i := range p {
			out = append(out, endpointHash(&p[i]))
		}
	}
	return out
}

// leaf is a group with a bucket per endpoint of eps. A tree's leaves have
// a key (leafKey); a list of one group has none (0), as before trees.
func (m groupMaker) leaf(id uint32, eps []graph.Endpoint, key uint64) *of.Group {
	return &of.Group{ID: id, Buckets: endpointBuckets{zone: m.zone, eps: eps, affinity: m.affinity}, HashFields: m.fields, Key: key}
}

// treeNode is one group of a tree: a leaf, with its endpoints, or a
// group of groups, with its children. A node's endpoints are chosen by
// bits of their hashes from its shift on (fanout's worth).
type treeNode struct {
	id       uint32
	slot     string
	size     int         // endpoints under it
	shift    uint        // the first hash bit its children are chosen by
	children []*treeNode // a group of groups: fanout of them, nil where no endpoint falls
	eps      []graph.Endpoint
	hashes   []uint64  // a leaf: its endpoints (the list's order) and theirs; never written once set
	group    *of.Group // as last rendered; nil: to render
}

func (n *treeNode) isLeaf() bool { return n.children == nil }

// buildTree makes the tree of a long list anew.
func (m groupMaker) buildTree(id uint32, slot string, list graph.EndpointList) *treeNode {
	eps := list.Slice()
	return m.buildNode(id, slot, eps, treeHashes(list), 0)
}

// buildNode makes a group of groups over eps (hashes: theirs; both owned
// by the tree from now on), choosing children by hash bits from shift.
func (m groupMaker) buildNode(id uint32, slot string, eps []graph.Endpoint, hashes []uint64, shift uint) *treeNode {
	fanout := fanoutFor(len(eps))
	mask := uint64(fanout - 1)
	start := make([]int, fanout+1)
	for _, h := range hashes {
		start[h>>shift&mask+1]++
	}
	for c := range fanout {
		start[c+1] += start[c]
	}
	// Each child's endpoints, in the list's order.
	byEps, byHash := make([]graph.Endpoint, len(eps)), make([]uint64, len(eps))
	next := append([]int(nil), start[:fanout]...)
	for i, h := range hashes {
		c := h >> shift & mask
		byEps[next[c]], byHash[next[c]] = eps[i], h
		next[c]++
	}
	n := &treeNode{id: id, slot: slot, size: len(eps), shift: shift, children: make([]*treeNode, fanout)}
	for c := range fanout {
		lo, hi := start[c], start[c+1]
		if lo == hi {
			continue
		}
		cslot := slot + "/" + strconv.Itoa(c)
		cid := m.ids(cslot)
		if hi-lo <= leafMax {
			n.children[c] = &treeNode{id: cid, slot: cslot, size: hi - lo, eps: byEps[lo:hi:hi], hashes: byHash[lo:hi:hi]}
		} else {
			n.children[c] = m.buildNode(cid, cslot, byEps[lo:hi:hi], byHash[lo:hi:hi], shift+uint(bits.TrailingZeros(uint(fanout))))
		}
	}
	return n
}

// render appends the groups of n's tree to out, the group of groups
// before its children, rendering only the nodes without a group.
func (m groupMaker) render(n *treeNode, out []*of.Group) []*of.Group {
	if n.isLeaf() {
		if n.group == nil {
			n.group = m.leaf(n.id, n.eps, m.leafKey(n.hashes))
		}
		return append(out, n.group)
	}
	if n.group == nil {
		top := &childBuckets{}
		for _, c := range n.children {
			if c != nil {
				top.ids = append(top.ids, c.id)
				top.sizes = append(top.sizes, c.size)
			}
		}
		top.weights = childWeights(top.sizes)
		n.group = &of.Group{ID: n.id, Buckets: top, HashFields: m.fields, Key: top.key()}
	}
	out = append(out, n.group)
	for _, c := range n.children {
		if c != nil {
			out = m.render(c, out)
		}
	}
	return out
}

// fanoutFor is the number of children a tree over n endpoints has: the
// smallest power of two that brings them to LeafSize each on average, at
// most maxFanout (then children are trees too).
func fanoutFor(n int) int {
	f := 2
	for f < maxFanout && (n+f-1)/f > LeafSize {
		f *= 2
	}
	return f
}

// endpointHash places an endpoint in a tree: a hash of its address (as
// 16 bytes) and port, each word mixed by splitmix64's finaliser so every
// slice of the bits spreads endpoints evenly. (It was FNV over the bytes:
// a quarter of a 50 000-endpoint change's time in the driver.)
func endpointHash(e *graph.Endpoint) uint64 {
	a := e.IP.As16()
	hi, lo := binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
	return of.Mix64(of.Mix64(hi^uint64(e.Port)<<48) ^ lo)
}

// leafKey is a leaf's Key: a hash of what its buckets are made of (the
// zone, affinity, and each endpoint's address and port, in order: hashes).
func (m groupMaker) leafKey(hashes []uint64) uint64 {
	k := uint64(m.zone) << 1
	if m.affinity {
		k |= 1
	}
	for _, h := range hashes {
		k = (k ^ h) * 0x9e3779b97f4a7c15 // order counts: buckets are in order
		k ^= k >> 29
	}
	return k | 1 // never 0 (no key)
}

// childBuckets are a group of groups' buckets: one per child group, of
// the weight that gives it its share.
type childBuckets struct {
	ids     []uint32
	sizes   []int // endpoints under each child
	weights []uint16
}

func (c *childBuckets) Len() int                 { return len(c.ids) }
func (c *childBuckets) Bucket(i int) []of.Action { return actions(of.ToGroup(c.ids[i])) }
func (c *childBuckets) Weight(i int) uint16      { return c.weights[i] }

// key is the group of groups' Key: its children and their weights.
func (c *childBuckets) key() uint64 {
	h := fnv.New64a()
	var b [6]byte
	for i, id := range c.ids {
		binary.BigEndian.PutUint32(b[:], id)
		binary.BigEndian.PutUint16(b[4:], c.weights[i])
		h.Write(b[:])
	}
	return h.Sum64() | 1
}
