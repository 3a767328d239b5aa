package ofconn

import (
	"slices"
	"testing"

	"antrea.io/libOpenflow/openflow15"
)

// An aggregate reply's flow count is read whatever statistics come
// before it; a reply without one, or cut short, is an error.
func TestAggregateFlowCount(t *testing.T) {
	full := AppendAggregateStats(nil, 200000)
	noCount := AppendFlowStats(nil, 5, 500) // packet and byte counts only
	for _, tc := range []struct {
		name    string
		stats   []byte
		want    int
		wantErr bool
	}{
		{name: "packet, byte and flow counts", stats: full, want: 200000},
		{name: "no flow count", stats: noCount, wantErr: true},
		{name: "cut in its header", stats: full[:3], wantErr: true},
		{name: "length past the end", stats: full[:12], wantErr: true},
		{name: "a cut statistic", stats: func() []byte { b := append([]byte(nil), full...); b[3] = 10; return b }(), wantErr: true},
	} {
		got, err := aggregateFlowCount(tc.stats)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("%s: %d, %v; want %d (an error: %v)", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

// A multipart reply's entries are cut by their lengths, except an
// aggregate reply's body, which is one; a cut entry is an error.
func TestReplyEntries(t *testing.T) {
	two := append(groupDescBytes(1, []uint32{7}), groupDescBytes(2, nil)...)
	for _, tc := range []struct {
		name    string
		typ     uint16
		body    []byte
		want    []int // the entries' lengths
		wantErr bool
	}{
		{name: "two group descriptions", typ: openflow15.MultipartType_GroupDesc, body: two, want: []int{groupDescFixedLen + bucketFixedLen, groupDescFixedLen}},
		{name: "an aggregate", typ: openflow15.MultipartType_AggregateStats, body: AppendAggregateStats(nil, 3), want: []int{40}}, // 36, padded to 8
		{name: "one byte left", typ: openflow15.MultipartType_GroupDesc, body: append(groupDescBytes(2, nil), 0), want: []int{groupDescFixedLen}, wantErr: true},
		{name: "an entry of length 0", typ: openflow15.MultipartType_FlowDesc, body: make([]byte, 8), wantErr: true},
	} {
		var got []int
		err := replyEntries(tc.typ, tc.body, func(e []byte) error { got = append(got, len(e)); return nil })
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("%s: entries %v, %v; want %v (an error: %v)", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}
