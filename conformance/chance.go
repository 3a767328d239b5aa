package conformance

import (
	"fmt"
	"math"
)

// chanceLimit is the most a probe may fail by chance alone: a dataplane
// that spreads connections evenly over a probe's Reaches still shows
// fewer than the probe asks for (all, or distinct) with some
// probability, and a case must make enough connections to keep that
// below this. CI runs every case on several dataplanes: the suite's
// chance of a spurious failure is at most the sum over its probes and
// dataplanes.
const chanceLimit = 1e-4

// checkChance refuses a probe with too few connections for its
// expectation (see chanceLimit).
func (p *ProbeSpec) checkChance() error {
	k, need := len(p.Expect.Reaches), p.Expect.spread()
	if need < 2 || k < need {
		return nil
	}
	if c := missChance(k, need, p.Count); c > chanceLimit {
		return fmt.Errorf("count %d: an even spread over %d endpoints shows fewer than %d of them with chance %.1g (over %g); make at least %d connections",
			p.Count, k, need, c, chanceLimit, connectionsFor(k, need))
	}
	return nil
}

// spread is how many different endpoints the expectation needs to see.
func (e Expect) spread() int {
	if e.All {
		return len(e.Reaches)
	}
	return e.Distinct
}

// missChance bounds the chance that n connections spread evenly over k
// endpoints reach fewer than need of them: all n fall within some
// need-1 endpoints, summed over every such set (a union bound, so never
// below the true chance).
func missChance(k, need, n int) float64 {
	sets := binomial(k, need-1)
	return sets * math.Pow(float64(need-1)/float64(k), float64(n))
}

// connectionsFor is the fewest connections that keep missChance under
// chanceLimit.
func connectionsFor(k, need int) int {
	n := 1
	for missChance(k, need, n) > chanceLimit {
		n++
	}
	return n
}

func binomial(n, r int) float64 {
	b := 1.0
	for i := 1; i <= r; i++ {
		b = b * float64(n-r+i) / float64(i)
	}
	return b
}
