package openflow

import (
	"net/netip"
	"slices"
	"testing"
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
