package openflow

import (
	"hash/fnv"
	"slices"
)

// Keyed is implemented by Buckets whose maker can name each bucket's
// content without building its actions. BucketKey(i) is a hash of
// everything bucket i's actions are made of, including how they are made
// (a version of the maker's code: the IDs outlive the process, and a
// restart adopts what OVS holds by them). The contract: across the
// groups of one maker, equal keys mean equal actions (equal actions may
// have different keys: IDs then differ where they need not, which costs
// a group-mod, never a wrong adoption). The IDs of such buckets are
// derived from their keys, so their actions are built only when a
// message or text needs them (once per send, not twice).
type Keyed interface {
	BucketKey(i int) uint64
}

// BucketIDs are the IDs of the group's buckets, in order: each a hash of
// the bucket's content (its key, if the Buckets are Keyed, else its
// actions' encoding) and of its weight, so the group's content can be
// told from its bucket IDs alone. Two buckets whose hashes collide (with
// 31 bits, about one group in 40 of 10 000 buckets has a pair) take the
// next free ID in bucket order, so the IDs are unique, as OVS requires,
// and the same for the same buckets.
func (g *Group) BucketIDs() []uint32 {
	if g.bucketIDs == nil {
		n := g.nBuckets()
		ids := make([]uint32, n)
		var taken map[uint32]bool
		if n > smallGroup {
			taken = make(map[uint32]bool, n)
		}
		keyed, _ := g.Buckets.(Keyed)
		for i := range ids {
			var id uint32
			if keyed != nil {
				id = keyedBucketID(keyed.BucketKey(i), g.weight(i))
			} else {
				id = BucketID(g.Buckets.Bucket(i), g.weight(i))
			}
			for taken[id] || taken == nil && slices.Contains(ids[:i], id) {
				id = id%maxBucketID + 1
			}
			if taken != nil {
				taken[id] = true
			}
			ids[i] = id
		}
		g.bucketIDs = ids
	}
	return g.bucketIDs
}

// smallGroup is the most buckets whose IDs are checked for duplicates by
// scanning rather than with a set.
const smallGroup = 32

// maxBucketID is the largest bucket ID BucketID gives (31 bits, below
// OpenFlow's reserved IDs).
const maxBucketID = 0x7fffffff

// BucketID is a bucket's ID: a hash of its actions' encoding, and of its
// weight unless it is DefaultWeight (so the IDs of groups whose buckets
// all have it did not change when weights came). Actions that cannot be
// encoded get ID 0, which makes the group's message fail.
func BucketID(acts []Action, weight uint16) uint32 {
	buf := scratch.Get().(*[]byte)
	defer scratch.Put(buf)
	b, err := appendActions((*buf)[:0], acts)
	if err != nil {
		return 0
	}
	if weight != DefaultWeight {
		b = append(b, byte(weight>>8), byte(weight))
	}
	*buf = b
	h := fnv.New32a()
	h.Write(b)
	return nonZeroID(h.Sum32())
}

// keyedBucketID is the ID of a bucket of Keyed Buckets: its key mixed
// (splitmix64's finaliser), with its weight unless it is DefaultWeight.
func keyedBucketID(key uint64, weight uint16) uint32 {
	if weight != DefaultWeight {
		key ^= uint64(weight) << 48
	}
	return nonZeroID(uint32(Mix64(key)))
}

// Mix64 is splitmix64's finaliser: every bit of x moves about half the
// bits of the result (the driver's hashes of keys and IDs).
func Mix64(x uint64) uint64 {
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// nonZeroID is a hash's low 31 bits as a bucket ID, 1 for 0 (the ID of a
// bucket whose actions cannot be encoded).
func nonZeroID(h uint32) uint32 {
	if id := h & maxBucketID; id != 0 {
		return id
	}
	return 1
}
