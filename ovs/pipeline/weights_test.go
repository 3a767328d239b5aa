package pipeline

import (
	"math"
	"math/rand/v2"
	"testing"
)

// winOdds agrees with what is known in closed form: equal weights are
// equally likely, and of two weights a ≥ b the larger wins 1 - b/2a.
func TestWinOddsClosedForms(t *testing.T) {
	for _, tc := range []struct {
		w, want []float64
	}{
		{[]float64{3, 3, 3, 3}, []float64{0.25, 0.25, 0.25, 0.25}},
		{[]float64{2, 1}, []float64{0.75, 0.25}},
		{[]float64{1, 5}, []float64{0.1, 0.9}},
	} {
		got := winOdds(tc.w)
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-12 {
				t.Fatalf("winOdds(%v) = %v, want %v", tc.w, got, tc.want)
			}
		}
	}
}

// childWeights give each child its share of the endpoints, by the exact
// odds and by OVS's own rule played out (16-bit scores times weights, the
// highest wins, the last of equal ones), for the shapes a partition
// makes: from 2 children of a list just over LeafSize to maxFanout.
func TestChildWeightsGiveEachEndpointItsShare(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ endpoints, children int }{{257, 2}, {1000, 4}, {10000, 64}, {50000, 256}} {
		sizes := make([]int, tc.children)
		for range tc.endpoints {
			sizes[rng.IntN(tc.children)]++
		}
		w := childWeights(sizes)
		fw := make([]float64, len(w))
		for i, x := range w {
			fw[i] = float64(x)
		}
		odds := winOdds(fw)
		worst := 0.0
		for i, s := range sizes {
			perEndpoint := odds[i] / float64(s) * float64(tc.endpoints)
			worst = max(worst, math.Abs(perEndpoint-1))
		}
		// Rounding to 16 bits costs about children/65535.
		if limit := 0.002 + float64(tc.children)/65535; worst > limit {
			t.Errorf("%d endpoints in %d children: an endpoint's share is off by %.3f%%, want under %.3f%%",
				tc.endpoints, tc.children, 100*worst, 100*limit)
		}
		if tc.children > 4 {
			continue // played out for the small shapes only: the counts need many rounds
		}
		const rounds = 2_000_000
		won := make([]int, len(w))
		for range rounds {
			best, bestScore := 0, uint32(0)
			for i, x := range w {
				if s := uint32(rng.IntN(1<<16)) * uint32(x); s >= bestScore {
					best, bestScore = i, s
				}
			}
			won[best]++
		}
		for i, s := range sizes {
			got, want := float64(won[i])/rounds, float64(s)/float64(tc.endpoints)
			if sd := math.Sqrt(want * (1 - want) / rounds); math.Abs(got-want) > 5*sd+1e-4 {
				t.Errorf("%d endpoints in %d children: child %d (%d endpoints) won %.4f of %d picks, want %.4f",
					tc.endpoints, tc.children, i, s, got, rounds, want)
			}
		}
	}
}
