package ofconn

import (
	"encoding/binary"
	"slices"
	"testing"
)

// groupDescBytes encodes an ofp_group_desc with buckets carrying ids and
// no actions.
func groupDescBytes(id uint32, bucketIDs []uint32) []byte {
	buckets := len(bucketIDs) * bucketFixedLen
	b := binary.BigEndian.AppendUint16(nil, uint16(groupDescFixedLen+buckets))
	b = append(b, 1, 0) // type select, pad
	b = binary.BigEndian.AppendUint32(b, id)
	b = binary.BigEndian.AppendUint16(b, uint16(buckets))
	b = append(b, 0, 0, 0, 0, 0, 0)
	for _, bid := range bucketIDs {
		b = binary.BigEndian.AppendUint16(b, bucketFixedLen)
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.BigEndian.AppendUint32(b, bid)
	}
	return b
}

// TestGroupDescKeepsEachGroupsBucketIDs: many groups share the arrays
// their bucket IDs are read into, also across the arrays' growth.
func TestGroupDescKeepsEachGroupsBucketIDs(t *testing.T) {
	var ids []uint32
	want := map[uint32][]uint32{}
	var got []GroupInfo
	for g := range uint32(3000) {
		var bids []uint32
		for b := range g%7 + 1 {
			bids = append(bids, g*100+b)
		}
		want[g] = bids
		info, more, err := groupDesc(groupDescBytes(g, bids), ids)
		if err != nil {
			t.Fatal(err)
		}
		ids = more
		got = append(got, info)
	}
	for _, g := range got {
		if !slices.Equal(g.BucketIDs, want[g.ID]) {
			t.Fatalf("group %d: bucket IDs %v, want %v", g.ID, g.BucketIDs, want[g.ID])
		}
	}
	for _, tc := range []struct {
		name  string
		entry []byte
	}{
		{"short", make([]byte, groupDescFixedLen-1)},
		{"buckets past the end", groupDescBytes(1, []uint32{1})[:groupDescFixedLen+4]},
		{"a bucket of 0 bytes", func() []byte { b := groupDescBytes(1, []uint32{1}); b[groupDescFixedLen+1] = 0; return b }()},
	} {
		if _, _, err := groupDesc(tc.entry, nil); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
