package conformance

import (
	"math"
	"testing"
)

func TestMissChance(t *testing.T) {
	for _, tc := range []struct {
		k, need, n int
		want       float64
	}{
		// Two endpoints, both wanted: one of two disjoint events (all
		// to p1, all to p2), so the bound is exact.
		{2, 2, 10, 2.0 / 1024},
		{2, 2, 20, 2.0 / (1 << 20)},
		// At least two of three: all on one of them.
		{3, 2, 8, 3 / math.Pow(3, 8)},
		// All of three: all within one of the three pairs.
		{3, 3, 30, 3 * math.Pow(2.0/3, 30)},
		{5, 5, 50, 5 * math.Pow(0.8, 50)},
	} {
		if got := missChance(tc.k, tc.need, tc.n); math.Abs(got-tc.want) > tc.want*1e-9 {
			t.Errorf("missChance(%d, %d, %d) = %g, want %g", tc.k, tc.need, tc.n, got, tc.want)
		}
	}
	if got := connectionsFor(2, 2); got != 15 {
		t.Errorf("connectionsFor(2, 2) = %d, want 15 (2·2^-14 is over the limit, 2·2^-15 under)", got)
	}
}
