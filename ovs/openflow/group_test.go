package openflow

import (
	"net/netip"
	"slices"
	"testing"

	"antrea.io/libOpenflow/openflow15"
)

// Bucket IDs are unique within a group even when two buckets' hashes
// collide, and the same for the same buckets; a weight other than the
// default changes a bucket's ID, the default one leaves the IDs groups
// had before weights came.
func TestBucketIDs(t *testing.T) {
	nat := func(ip string) []Action {
		return []Action{CT{Commit: true, Zone: 7, Table: 8, NAT: &NAT{Kind: "dst", IP: netip.MustParseAddr(ip), Port: 80}}}
	}
	a, b := nat("10.0.0.1"), nat("10.0.0.2")
	// The same bucket twice collides by construction.
	for _, n := range []int{2, smallGroup + 5} {
		list := BucketList{a}
		for i := 1; i < n; i++ {
			list = append(list, a)
		}
		ids := (&Group{Buckets: list}).BucketIDs()
		sorted := slices.Sorted(slices.Values(ids))
		if len(slices.Compact(sorted)) != n {
			t.Fatalf("%d equal buckets got IDs %v, want %d distinct", n, ids, n)
		}
		if again := (&Group{Buckets: list}).BucketIDs(); !slices.Equal(ids, again) {
			t.Fatalf("the same buckets got %v, then %v", ids, again)
		}
		if ids[0] != BucketID(a, DefaultWeight) || ids[1] != ids[0]%maxBucketID+1 {
			t.Fatalf("a colliding bucket got %d after %d, want the next ID", ids[1], ids[0])
		}
	}
	plain := (&Group{Buckets: BucketList{a, b}}).BucketIDs()
	weighted := (&Group{Buckets: weightedList{BucketList{a, b}, []uint16{DefaultWeight, 7}}}).BucketIDs()
	if plain[0] != weighted[0] || plain[1] == weighted[1] {
		t.Fatalf("IDs without weights %v, with weights 100 and 7 %v: want the first equal, the second not", plain, weighted)
	}
}

// keyedList is a BucketList whose buckets name their content by a key
// (of.Keyed) and count how often their actions are built.
type keyedList struct {
	BucketList
	keys  []uint64
	built *int
}

func (l keyedList) BucketKey(i int) uint64 { return l.keys[i] }

func (l keyedList) Bucket(i int) []Action { *l.built++; return l.BucketList[i] }

// Keyed buckets' IDs come from their keys alone (no bucket is built for
// them): equal keys give equal IDs, colliding ones the next free ID, and
// a weight other than the default changes the ID. Their message still
// carries each bucket's actions, built once.
func TestKeyedBucketIDs(t *testing.T) {
	nat := func(ip string) []Action {
		return []Action{CT{Commit: true, Zone: 7, Table: 8, NAT: &NAT{Kind: "dst", IP: netip.MustParseAddr(ip), Port: 80}}}
	}
	built := 0
	list := keyedList{BucketList{nat("10.0.0.1"), nat("10.0.0.2"), nat("10.0.0.1")}, []uint64{11, 12, 11}, &built}
	g := &Group{ID: 3, Buckets: list}
	ids := g.BucketIDs()
	if built != 0 {
		t.Fatalf("computing keyed buckets' IDs built %d buckets, want none", built)
	}
	want := []uint32{keyedBucketID(11, DefaultWeight), keyedBucketID(12, DefaultWeight), keyedBucketID(11, DefaultWeight)%maxBucketID + 1}
	if !slices.Equal(ids, want) {
		t.Fatalf("keyed IDs %v, want %v (the third, colliding with the first, the next ID)", ids, want)
	}
	again := (&Group{Buckets: keyedList{list.BucketList, []uint64{11, 12, 11}, &built}}).BucketIDs()
	if !slices.Equal(ids, again) {
		t.Fatalf("the same keys got %v, then %v", ids, again)
	}
	if keyedBucketID(11, 7) == keyedBucketID(11, DefaultWeight) {
		t.Fatal("a weight of 7 left a keyed bucket's ID as the default weight's")
	}
	if _, err := g.AppendGroupMod(nil, openflow15.OFPGC_ADD, 1); err != nil {
		t.Fatal(err)
	}
	if built != 3 {
		t.Fatalf("the group's message built %d buckets, want each of the 3 once", built)
	}
}
