package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const benchOut = `pkg: github.com/switchyard-proxy/switchyard/ovs
BenchmarkRealOVS/services=1000/endpoints=10000-2         1   5.0 apply-p99-ms   0 flow-mods/change   1 group-mods/change
BenchmarkRealOVS/services=1000/endpoints=10000-2         1   12.0 apply-p99-ms  0 flow-mods/change   1 group-mods/change
BenchmarkRealOVS/services=1000/endpoints=10000-2         1   6.0 apply-p99-ms   0 flow-mods/change   2 group-mods/change
BenchmarkRealOVS/services=10000/endpoints=100000-2       1   7.0 apply-p99-ms   0 flow-mods/change   1 group-mods/change
`

// TestParseKeepsWorstAndBest pins what parse keeps of repeated runs.
func TestParseKeepsWorstAndBest(t *testing.T) {
	rep := parse(strings.NewReader(benchOut))
	key := "ovs:BenchmarkRealOVS/services=1000/endpoints=10000"
	want := report{
		worst: results{
			key: {"apply-p99-ms": 12, "flow-mods/change": 0, "group-mods/change": 2, "runs": 3},
			"ovs:BenchmarkRealOVS/services=10000/endpoints=100000": {"apply-p99-ms": 7, "flow-mods/change": 0, "group-mods/change": 1, "runs": 1},
		},
		best: results{
			key: {"apply-p99-ms": 5, "flow-mods/change": 0, "group-mods/change": 1},
			"ovs:BenchmarkRealOVS/services=10000/endpoints=100000": {"apply-p99-ms": 7, "flow-mods/change": 0, "group-mods/change": 1},
		},
	}
	if d := cmp.Diff(want, rep, cmp.AllowUnexported(report{})); d != "" {
		t.Fatalf("parse (-want +got):\n%s", d)
	}
}

// TestVerdict pins when a target is met: every one of at least three
// runs met it, and "not run" when a benchmark it reads is missing.
func TestVerdict(t *testing.T) {
	three := result{"p99-ms": 8, "runs": 3}
	for _, tc := range []struct {
		name string
		ok   bool
		rs   []result
		want string
	}{
		{"met in three runs", true, []result{three}, "met in every one of 3 runs"},
		{"one run only", true, []result{{"p99-ms": 8, "runs": 1}}, "not confirmed: met in 1 run(s) of the 3 needed"},
		{"the fewest runs of the results it reads count", true, []result{three, {"p99-ms": 8, "runs": 2}}, "not confirmed: met in 2 run(s) of the 3 needed"},
		{"missed in one run", false, []result{three}, "**missed**"},
		{"missed in a single run", false, []result{{"p99-ms": 80, "runs": 1}}, "**missed**"},
		{"a benchmark missing", true, []result{three, nil}, "not run"},
		{"no benchmark at all", true, nil, "not run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := verdict(tc.ok, tc.rs...); got != tc.want {
				t.Fatalf("verdict = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestVerdictOnMissingUnit pins that a unit a target reads, missing from
// a result that ran (kube-proxy not run beside switchyard), is "not run",
// never a pass of its test on the 0 it reads as.
func TestVerdictOnMissingUnit(t *testing.T) {
	r := result{"sy/kp-rss-max": 0.2, "runs": 3}
	units := []string{"sy/kp-rss-max", "sy/kp-start-to-synced"}
	if got := verdictOn(r["sy/kp-rss-max"] < 1 && r["sy/kp-start-to-synced"] < 1, units, r); got != "not run" {
		t.Fatalf("verdictOn = %q, want not run", got)
	}
	r["sy/kp-start-to-synced"] = 0.05
	if got := verdictOn(true, units, r); got != "met in every one of 3 runs" {
		t.Fatalf("verdictOn with every unit = %q", got)
	}
}

// TestSame pins that a figure a target wants unchanged must be the same in
// every run of every benchmark named.
func TestSame(t *testing.T) {
	rep := parse(strings.NewReader(benchOut))
	small := "ovs:BenchmarkRealOVS/services=1000/endpoints=10000"
	big := "ovs:BenchmarkRealOVS/services=10000/endpoints=100000"
	for _, tc := range []struct {
		name  string
		units []string
		keys  []string
		want  bool
	}{
		{"flow-mods the same everywhere", []string{"flow-mods/change"}, []string{small, big}, true},
		{"group-mods differ between runs of one size", []string{"group-mods/change"}, []string{small, big}, false},
		{"one of two units differs", []string{"flow-mods/change", "group-mods/change"}, []string{small}, false},
		{"a benchmark missing", []string{"flow-mods/change"}, []string{small, "ovs:BenchmarkRealOVS/services=30000/endpoints=300000"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rep.same(tc.units, tc.keys...); got != tc.want {
				t.Fatalf("same = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestParseJoinsSplitResults pins that a result go test printed on a line
// of its own, after output the benchmark logged behind its name, counts
// as that benchmark's run.
func TestParseJoinsSplitResults(t *testing.T) {
	const out = "pkg: github.com/switchyard-proxy/switchyard/ovs\n" +
		"BenchmarkRealOVS/services=1000/endpoints=10000-2 \t       1\t5 ns/op\t 5.0 apply-p99-ms\n" +
		"BenchmarkRealOVS/services=1000/endpoints=10000-2 \tI1129 01:46:27.611111   16774 client.go:147] \"Created bridge\"\n" +
		"I1129 01:46:28.000000   16774 client.go:147] \"Created bridge\"\n" +
		"       1\t7 ns/op\t 12.0 apply-p99-ms\n" +
		"BenchmarkRealOVS/services=1000/endpoints=10000-2 \t\n" +
		"--- BENCH: BenchmarkRealOVS/services=1000/endpoints=10000-2\n" +
		"       1\t6 ns/op\t 6.0 apply-p99-ms\n" +
		"       1\t9 ns/op\t 60.0 apply-p99-ms\n"
	rep := parse(strings.NewReader(out))
	want := result{"ns/op": 7, "apply-p99-ms": 12, "runs": 3}
	if d := cmp.Diff(want, rep.worst["ovs:BenchmarkRealOVS/services=1000/endpoints=10000"]); d != "" {
		t.Fatalf("parse (-want +got):\n%s", d)
	}
}
