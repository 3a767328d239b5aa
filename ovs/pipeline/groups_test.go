package pipeline

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"testing"

	"antrea.io/libOpenflow/openflow15"
	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// maxGroupMod is the longest group message a bundle carries: an OpenFlow
// message holds 64 KiB, and the bundle-add message around it takes 16.
const maxGroupMod = 0xffff - 16

// endpointsN returns n endpoints of a family, each its own address.
func endpointsN(fam graph.IPFamily, n int) []graph.Endpoint {
	eps := make([]graph.Endpoint, n)
	for i := range eps {
		ip := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		if fam == graph.IPv6 {
			ip = netip.AddrFrom16([16]byte{0xfd, 0, 2, 0x44, 15: byte(i), 14: byte(i >> 8), 13: byte(i >> 16)})
		}
		eps[i] = graph.Endpoint{IP: ip, Port: 8080, Ready: true, Serving: true}
	}
	return eps
}

// slotIDs gives every slot its own ID, as the driver's allocator does.
func slotIDs() GroupIDs {
	ids := map[string]uint32{}
	return func(slot string) uint32 {
		if id, ok := ids[slot]; ok {
			return id
		}
		ids[slot] = 0x80000001 + uint32(len(ids)) // the roots below are 0x80000000
		return ids[slot]
	}
}

// The largest groups the pipeline makes fit one message: a leaf of
// leafMax of the largest buckets (IPv6 with NAT; with affinity), and a
// group of maxFanout groups.
func TestLargestGroupsFitOneMessage(t *testing.T) {
	for _, affinity := range []bool{false, true} {
		m := groupMaker{zone: 0x5359, affinity: affinity, fields: hashFields(graph.IPv6, of.ProtoSCTP)}
		g := m.leaf(0x80000001, endpointsN(graph.IPv6, leafMax), 1)
		msg, err := g.AppendGroupMod(nil, openflow15.OFPGC_MODIFY, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(msg) > maxGroupMod {
			t.Errorf("a leaf of %d IPv6 buckets (affinity %v) is %d bytes, more than a message holds (%d)", leafMax, affinity, len(msg), maxGroupMod)
		}
	}
	top := &childBuckets{}
	for i := range maxFanout {
		top.ids, top.sizes = append(top.ids, 0x80000000+uint32(i)), append(top.sizes, 200+i%7)
	}
	top.weights = childWeights(top.sizes)
	msg, err := (&of.Group{ID: 1, Buckets: top, HashFields: hashFields(graph.IPv6, of.ProtoSCTP)}).AppendGroupMod(nil, openflow15.OFPGC_MODIFY, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg) > maxGroupMod {
		t.Errorf("a group of %d groups is %d bytes, more than a message holds", maxFanout, len(msg))
	}
}

// groupTree is a list's groups as a tree, walked from the first (the
// root).
type groupTree struct {
	byID map[uint32]*of.Group
}

func treeOf(t *testing.T, groups []*of.Group) groupTree {
	t.Helper()
	tr := groupTree{byID: map[uint32]*of.Group{}}
	for _, g := range groups {
		if tr.byID[g.ID] != nil {
			t.Fatalf("group %#x made twice", g.ID)
		}
		tr.byID[g.ID] = g
	}
	return tr
}

// shares walks the tree from id, giving each endpoint the odds that OVS
// picks it (the product of its groups' odds along the way), and checks
// every group on the way fits one message.
func (tr groupTree) shares(t *testing.T, id uint32, odds float64, out map[netip.AddrPort]float64, depth int) {
	t.Helper()
	g := tr.byID[id]
	if g == nil {
		t.Fatalf("group %#x is sent to but was not made", id)
	}
	msg, err := g.AppendGroupMod(nil, openflow15.OFPGC_ADD, 1)
	if err != nil || len(msg) > maxGroupMod {
		t.Fatalf("group %#x: %d bytes (%v), more than a message holds", id, len(msg), err)
	}
	switch b := g.Buckets.(type) {
	case endpointBuckets:
		if b.Len() > leafMax || depth > 0 && b.Len() == 0 {
			t.Fatalf("leaf %#x holds %d endpoints", id, b.Len())
		}
		for i := range b.Len() {
			e := b.endpoint(i)
			if _, dup := out[e.AddrPort()]; dup {
				t.Fatalf("endpoint %s is in two leaves", e.AddrPort())
			}
			out[e.AddrPort()] = odds / float64(b.Len())
		}
	case *childBuckets:
		if b.Len() > maxFanout {
			t.Fatalf("group of groups %#x has %d children", id, b.Len())
		}
		w := make([]float64, b.Len())
		for i := range w {
			w[i] = float64(b.Weight(i))
		}
		for i, p := range winOdds(w) {
			tr.shares(t, b.ids[i], odds*p, out, depth+1)
		}
	default:
		t.Fatalf("group %#x has buckets of type %T", id, b)
	}
}

// A list of up to LeafSize endpoints is one group; a longer one is a tree
// of groups that each fit one message, holding every endpoint once, and
// OVS picks each endpoint with odds within 1% of 1/n.
func TestLargeListsAreTreesWithEvenShares(t *testing.T) {
	for _, n := range []int{1, LeafSize, LeafSize + 1, 1000, 10_000, 50_000, 120_000} {
		for _, fam := range []graph.IPFamily{graph.IPv4, graph.IPv6} {
			t.Run(fmt.Sprintf("%d/%s", n, fam), func(t *testing.T) {
				eps := graph.EndpointListOf(endpointsN(fam, n)...)
				m := groupMaker{zone: 7, fields: hashFields(fam, of.ProtoTCP), ids: slotIDs()}
				groups := m.groups(0x80000000, "x", eps)
				if n <= LeafSize && len(groups) != 1 {
					t.Fatalf("%d endpoints made %d groups, want one", n, len(groups))
				}
				shares := map[netip.AddrPort]float64{}
				treeOf(t, groups).shares(t, groups[0].ID, 1, shares, 0)
				if len(shares) != n {
					t.Fatalf("the tree holds %d of %d endpoints", len(shares), n)
				}
				worst := 0.0
				for _, p := range shares {
					worst = max(worst, math.Abs(p*float64(n)-1))
				}
				if worst > 0.01 {
					t.Errorf("an endpoint's odds are off by %.2f%% of 1/%d", 100*worst, n)
				}
				if again := m.groups(0x80000000, "x", eps); !sameGroups(groups, again) {
					t.Errorf("the same list made other groups")
				}
			})
		}
	}
}

// sameGroups reports whether two lists of groups have the same IDs and
// buckets.
func sameGroups(a, b []*of.Group) bool {
	return slices.EqualFunc(a, b, func(x, y *of.Group) bool {
		return x.ID == y.ID && x.Key == y.Key && slices.Equal(x.BucketIDs(), y.BucketIDs())
	})
}

// One endpoint coming or going in a 10 000-endpoint list changes its leaf
// and the weights of the group above it: two groups, whatever the list's
// size; every other group keeps its Key and buckets.
func TestOneEndpointChangesItsLeafAndItsParent(t *testing.T) {
	eps := endpointsN(graph.IPv4, 10_001)
	m := groupMaker{zone: 7, fields: hashFields(graph.IPv4, of.ProtoTCP), ids: slotIDs()}
	before := m.groups(0x80000000, "x", graph.EndpointListOf(eps[:10_000]...))
	for name, after := range map[string][]*of.Group{
		"added":   m.groups(0x80000000, "x", graph.EndpointListOf(eps...)),
		"removed": m.groups(0x80000000, "x", graph.EndpointListOf(eps[1:10_000]...)),
	} {
		old := map[uint32]*of.Group{}
		for _, g := range before {
			old[g.ID] = g
		}
		var changed []string
		for _, g := range after {
			o := old[g.ID]
			switch {
			case o == nil:
				changed = append(changed, fmt.Sprintf("new %#x", g.ID))
			case o.Key != g.Key:
				if slices.Equal(o.BucketIDs(), g.BucketIDs()) {
					t.Errorf("%s: group %#x has a new Key but the same buckets", name, g.ID)
				}
				changed = append(changed, fmt.Sprintf("%T", g.Buckets))
			case !slices.Equal(o.BucketIDs(), g.BucketIDs()):
				t.Errorf("%s: group %#x kept its Key but its buckets changed", name, g.ID)
			}
		}
		if diff := cmp.Diff([]string{"*pipeline.childBuckets", "pipeline.endpointBuckets"}, changed); diff != "" {
			t.Errorf("%s: changed groups (-want +got):\n%s", name, diff)
		}
	}
}
