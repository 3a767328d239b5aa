package main

import (
	"fmt"
	"maps"
	"math"
	"os/exec"
	"slices"
	"strings"
)

// runsNeeded is how many runs of a benchmark a target needs before it can
// be called met: one run on a shared 2-core machine proves little.
const runsNeeded = 3

// verdict is a target's verdict: ok is its test on the worst values of
// the results it reads (rs). It is met only when every one of at least
// runsNeeded runs of each of them met it, "not run" when one is missing.
func verdict(ok bool, rs ...result) string {
	runs := math.MaxInt
	for _, r := range rs {
		if len(r) == 0 {
			return "not run"
		}
		runs = min(runs, int(r["runs"]))
	}
	switch {
	case len(rs) == 0:
		return "not run"
	case !ok:
		return "**missed**"
	case runs < runsNeeded:
		return fmt.Sprintf("not confirmed: met in %d run(s) of the %d needed", runs, runsNeeded)
	}
	return fmt.Sprintf("met in every one of %d runs", runs)
}

// verdictOn is verdict for a test that reads units of rs: "not run" when
// one of the results lacks one of them (a missing unit reads as 0, which
// would pass a test of "below").
func verdictOn(ok bool, units []string, rs ...result) string {
	for _, r := range rs {
		for _, u := range units {
			if _, has := r[u]; !has {
				return "not run"
			}
		}
	}
	return verdict(ok, rs...)
}

// same reports whether each unit had one value in every run of every
// benchmark named by keys: the best run equals the worst everywhere.
func (rep report) same(units []string, keys ...string) bool {
	for _, u := range units {
		var seen []float64
		for _, k := range keys {
			w, okW := rep.worst[k][u]
			b, okB := rep.best[k][u]
			if !okW || !okB {
				return false
			}
			seen = append(seen, w, b)
		}
		if len(slices.Compact(seen)) != 1 {
			return false
		}
	}
	return true
}

// spreadSummary says how far the runs of the benchmarks run more than
// once spread: the largest (worst - best) / best over their time units.
func spreadSummary(rep report) string {
	most, where := 0.0, ""
	for _, k := range slices.Sorted(maps.Keys(rep.worst)) {
		w := rep.worst[k]
		if w["runs"] < 2 {
			continue
		}
		for _, u := range slices.Sorted(maps.Keys(w)) {
			v, b := w[u], rep.best[k][u]
			if !isTime(u) || b <= 0 {
				continue
			}
			if s := (v - b) / b; s > most {
				most, where = s, k+" "+u
			}
		}
	}
	if where == "" {
		return "no benchmark here ran more than once"
	}
	return fmt.Sprintf("the widest spread between runs of one figure was %.0f%% (%s)", most*100, where)
}

func isTime(unit string) bool {
	return unit == "ns/op" || strings.HasSuffix(unit, "-ms") || strings.HasSuffix(unit, "-s")
}

func hnsChangeKey(build, n int) string {
	return fmt.Sprintf("hns:BenchmarkOneEndpointChange/windows=%d/services=%d", build, n)
}

// versionOf is the --version of the kube-apiserver binary at path, or says
// it is not known.
func versionOf(path string) string {
	if path == "" {
		return "a kube-apiserver (its version not given to benchreport)"
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return "a kube-apiserver (" + path + " --version: " + err.Error() + ")"
	}
	return "kube-apiserver " + strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes ")
}
