package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTableColumnsPerSize pins a table over more than two sizes: a
// column per size ("not run" where a size did not run) and the growth
// between each size and the one before, empty where either is missing.
func TestTableColumnsPerSize(t *testing.T) {
	tb := table{title: "T", key: func(n int) string { return size("e2e:B", n) },
		rows:  []row{{"first sync, s", "s", 1}},
		sizes: []int{1000, 10000, 30000, 100000}}
	rs := results{
		size("e2e:B", 1000):   {"s": 0.5},
		size("e2e:B", 10000):  {"s": 4},
		size("e2e:B", 100000): {"s": 26.5},
	}
	var b strings.Builder
	tb.write(&b, rs)
	want := "### T\n\n" +
		"| | 1k Services / 10k endpoints | 10k Services / 100k endpoints | 30k Services / 300k endpoints | 100k Services / 1M endpoints | 10k ÷ 1k | 30k ÷ 10k | 100k ÷ 30k |\n" +
		"|---|---|---|---|---|---|---|---|\n" +
		"| first sync, s | 0.50 | 4.00 | not run | 26.5 | 8.0× |  |  |\n\n"
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Fatalf("table (-want +got):\n%s", d)
	}
}

func TestTargetNotRunShowsNoUnits(t *testing.T) {
	r := result{"runs": 3, "start-to-synced-s": 5}
	missing := apiScaleLimits[0].targets(nil)
	present := apiScaleLimits[0].targets(r)
	if got := missing[0].shown(); got != "not run" {
		t.Errorf("a target whose benchmark did not run shows %q, want \"not run\"", got)
	}
	if got := present[0].shown(); got != "5.00 s" {
		t.Errorf("a measured target shows %q, want \"5.00 s\"", got)
	}
}
