package engine

import (
	"slices"
	"testing"
)

// The index answers as a list per identity would, through adds and
// removes that move an identity between one flow and several.
func TestIdentityIndex(t *testing.T) {
	type op struct {
		add    bool
		id, c  uint64
		others bool // remove: whether flows remain
	}
	for _, tc := range []struct {
		name   string
		ops    []op
		id     uint64
		want   []uint64 // id's flows, in order of adding
		winner uint64
	}{
		{"one", []op{{add: true, id: 1, c: 7}}, 1, []uint64{7}, 7},
		{"two, the lower wins", []op{{add: true, id: 1, c: 9}, {add: true, id: 1, c: 7}}, 1, []uint64{9, 7}, 7},
		{"three, one removed", []op{{add: true, id: 1, c: 9}, {add: true, id: 1, c: 7}, {add: true, id: 1, c: 8}, {id: 1, c: 7, others: true}}, 1, []uint64{9, 8}, 8},
		{"back to one", []op{{add: true, id: 1, c: 9}, {add: true, id: 1, c: 7}, {id: 1, c: 7, others: true}}, 1, []uint64{9}, 9},
		{"gone", []op{{add: true, id: 1, c: 9}, {id: 1, c: 9}}, 1, nil, 0},
		{"others apart", []op{{add: true, id: 1, c: 9}, {add: true, id: 2, c: 3}}, 1, []uint64{9}, 9},
	} {
		x := newIdentityIndex()
		for _, o := range tc.ops {
			if o.add {
				x.add(o.id, o.c)
			} else if got := x.remove(o.id, o.c); got != o.others {
				t.Errorf("%s: remove(%d, %d) = %v, want %v", tc.name, o.id, o.c, got, o.others)
			}
		}
		var got []uint64
		x.each(tc.id, func(c uint64) { got = append(got, c) })
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: flows %v, want %v", tc.name, got, tc.want)
		}
		if len(tc.want) > 0 && x.winner(tc.id) != tc.winner {
			t.Errorf("%s: winner %d, want %d", tc.name, x.winner(tc.id), tc.winner)
		}
		if _, ok := x.many[tc.id]; ok && len(tc.want) < 2 {
			t.Errorf("%s: an identity with %d flows kept as a list", tc.name, len(tc.want))
		}
	}
}
