package pipeline

import (
	"math"
	"slices"
)

// OVS picks a bucket of a select group with selection_method=hash by
// scoring every bucket (hash_int(bucket_id, hash of the fields) & 0xffff)
// times its weight and taking the highest score (ofproto-dpif-xlate.c,
// group_best_live_bucket). Buckets of equal weight are equally likely,
// but the odds of unequal weights are not proportional to them: of two
// buckets weighing 2 and 1, the first wins 3 times in 4, not 2 in 3, and
// with 64 children a weight 1% above the rest wins ~64% more often.
//
// A group of groups (groups.go) must give each child group the share of
// the endpoints it holds, so its weights are solved for: with the scores
// taken as uniform, the odds of weights w are exact (winOdds), and a
// fixed-point iteration finds the weights whose odds are the shares.

// childWeights returns the bucket weights that make OVS pick each child
// in proportion to its size (sizes > 0). The largest weight is the
// largest OpenFlow holds, so rounding costs the least.
func childWeights(sizes []int) []uint16 {
	total := 0
	for _, s := range sizes {
		total += s
	}
	share := make([]float64, len(sizes))
	w := make([]float64, len(sizes))
	for i, s := range sizes {
		share[i] = float64(s) / float64(total)
		w[i] = 1
	}
	// Near equal weights, a child's odds move K times as fast as its
	// weight: the K-th root keeps each step from overshooting.
	step := 1 / float64(len(sizes))
	for range maxWeightRounds {
		odds := winOdds(w)
		worst := 0.0
		for i := range w {
			worst = max(worst, math.Abs(odds[i]/share[i]-1))
			w[i] *= math.Pow(share[i]/odds[i], step)
		}
		if worst < weightTolerance {
			break
		}
	}
	top := slices.Max(w)
	out := make([]uint16, len(w))
	for i, x := range w {
		out[i] = uint16(max(1, math.Round(x/top*math.MaxUint16)))
	}
	return out
}

const (
	maxWeightRounds = 60
	weightTolerance = 1e-6
)

// winOdds returns, for scores U_i*w_i with the U_i uniform on [0,1), the
// probability that each one is the highest. Sorted ascending, bucket r
// wins with probability
//
//	∫_0^{w_r} (1/w_r) Π_{j≠r} min(1, x/w_j) dx
//
// and on the piece [w_{m-1}, w_m] the factors j < m are 1 and the others
// x/w_j, so the integral is a sum over m ≤ r of terms T_m that do not
// depend on r: the odds are prefix sums, O(K log K) in all.
func winOdds(w []float64) []float64 {
	k := len(w)
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case w[a] < w[b]:
			return -1
		case w[a] > w[b]:
			return 1
		}
		return 0
	})
	// logProd[m] = Σ_{j≥m} log w_j (sorted).
	logProd := make([]float64, k+1)
	for j := k - 1; j >= 0; j-- {
		logProd[j] = logProd[j+1] + math.Log(w[order[j]])
	}
	odds := make([]float64, k)
	sum, lo := 0.0, 0.0
	for m := range k {
		hi := w[order[m]]
		n := float64(k - m) // the power of x, plus one
		t := math.Exp(n*math.Log(hi) - logProd[m])
		if lo > 0 {
			t -= math.Exp(n*math.Log(lo) - logProd[m])
		}
		sum += t / n
		odds[order[m]] = sum
		lo = hi
	}
	return odds
}
