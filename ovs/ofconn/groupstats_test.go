package ofconn

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Group statistics read back what was encoded, bucket by bucket; a
// statistic whose length is not a whole number of buckets is refused.
func TestGroupStatsRoundTrip(t *testing.T) {
	for _, want := range []GroupStats{
		{ID: 7, Packets: 12, Bytes: 900},
		{ID: 0xfffffff0, Packets: 3, Bytes: 180, BucketPackets: []uint64{1, 0, 2}},
	} {
		got, err := groupStats(AppendGroupStats(nil, want))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	}
	short := AppendGroupStats(nil, GroupStats{ID: 1, BucketPackets: []uint64{1}})
	for _, bad := range [][]byte{short[:groupStatsFixedLen-1], short[:len(short)-1]} {
		if _, err := groupStats(bad); err == nil {
			t.Errorf("%d bytes read as group statistics", len(bad))
		}
	}
}
