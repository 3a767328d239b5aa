package pipeline

import (
	"encoding/binary"
	"hash/fnv"
	"math/bits"
	"slices"
	"strconv"
	"sync"

	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// An endpoint list becomes select groups. A group is written in one
// OpenFlow message of at most 64 KiB, ~600 buckets with their NAT, and
// read back in one group description, whose length is 16 bits too. OVS
// 3.1 can grow a group past that with insert-bucket messages, but each
// one checks the whole group for duplicate bucket IDs pair by pair
// (ofproto.c, copy_buckets_for_insert_bucket): one endpoint added to a
// 10 000-endpoint group took ~100 ms of ovs-vswitchd here, and such a
// group cannot be dumped (ovs-ofctl fails to read the description back).
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
}

// groups returns the groups that select one of eps; the first has ID id
// and slot slot (its children's slots are under it: "IPv4/internal/5").
func (m groupMaker) groups(id uint32, slot string, eps graph.EndpointList) []*of.Group {
	n := eps.Len()
	if n <= LeafSize {
		return []*of.Group{m.leaf(id, eps, nil, 0)}
	}
	sc := treeScratch.Get().(*treeWork)
	defer treeScratch.Put(sc)
	sc.hashes, sc.all = slices.Grow(sc.hashes[:0], n)[:n], slices.Grow(sc.all[:0], n)[:n]
	t := tree{m: m, eps: eps, hashes: sc.hashes}
	i := 0
	for part := range eps.Parts() {
		for k := range part {
			t.hashes[i], sc.all[i] = endpointHash(&part[k]), int32(i)
			i++
		}
	}
	t.node(id, slot, sc.all, 0)
	return t.out
}

// treeWork is what making a tree needs and no group keeps: reused, so a
// change of a 50 000-endpoint list does not make 540 KB of garbage for it.
type treeWork struct {
	hashes []uint64
	all    []int32
}

var treeScratch = sync.Pool{New: func() any { return new(treeWork) }}

// leaf is a group with a bucket per endpoint: eps, or those of eps at
// idx when idx is not nil.
func (m groupMaker) leaf(id uint32, eps graph.EndpointList, idx []int32, key uint64) *of.Group {
	return &of.Group{ID: id, Buckets: endpointBuckets{zone: m.zone, eps: eps, idx: idx, affinity: m.affinity}, HashFields: m.fields, Key: key}
}

// tree makes the groups of one long list: its children refer to the
// list's endpoints by index (a 50 000-endpoint list is not copied into
// its leaves at every change).
type tree struct {
	m      groupMaker
	eps    graph.EndpointList
	hashes []uint64 // each endpoint's (endpointHash)
	out    []*of.Group
}

// node appends a group of groups over the endpoints at idx, taking bits
// of their hashes from shift on to choose the child, and then its
// children.
func (t *tree) node(id uint32, slot string, idx []int32, shift uint) {
	fanout := fanoutFor(len(idx))
	mask := uint64(fanout - 1)
	start := make([]int, fanout+1)
	for _, i := range idx {
		start[t.hashes[i]>>shift&mask+1]++
	}
	for c := range fanout {
		start[c+1] += start[c]
	}
	// Each child's endpoints, in the list's order.
	byChild := make([]int32, len(idx))
	next := append([]int(nil), start[:fanout]...)
	for _, i := range idx {
		c := t.hashes[i] >> shift & mask
		byChild[next[c]] = i
		next[c]++
	}
	top := &childBuckets{}
	t.out = append(t.out, nil) // the group of groups comes first
	at := len(t.out) - 1
	for c := range fanout {
		child := byChild[start[c]:start[c+1]]
		if len(child) == 0 {
			continue
		}
		cslot := slot + "/" + strconv.Itoa(c)
		cid := t.m.ids(cslot)
		if len(child) <= leafMax {
			t.out = append(t.out, t.m.leaf(cid, t.eps, child, t.leafKey(child)))
		} else {
			t.node(cid, cslot, child, shift+uint(bits.TrailingZeros(uint(fanout))))
		}
		top.ids = append(top.ids, cid)
		top.sizes = append(top.sizes, len(child))
	}
	top.weights = childWeights(top.sizes)
	t.out[at] = &of.Group{ID: id, Buckets: top, HashFields: t.m.fields, Key: top.key()}
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
	return mix64(mix64(hi^uint64(e.Port)<<48) ^ lo)
}

// mix64 is splitmix64's finaliser.
func mix64(x uint64) uint64 {
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// leafKey is a leaf's Key: a hash of what its buckets are made of (the
// zone, affinity, and each endpoint's address and port, in order).
func (t *tree) leafKey(idx []int32) uint64 {
	k := uint64(t.m.zone) << 1
	if t.m.affinity {
		k |= 1
	}
	for _, i := range idx {
		k = (k ^ t.hashes[i]) * 0x9e3779b97f4a7c15 // order counts: buckets are in order
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
func (c *childBuckets) Bucket(i int) []of.Action { return a(of.ToGroup(c.ids[i])) }
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
