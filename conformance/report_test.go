package conformance

import (
	"strings"
	"testing"
)

// TestReportsSayWhatWasJudged: a case judged on some steps only reads as
// such in the test output, the matrix and the totals.
func TestReportsSayWhatWasJudged(t *testing.T) {
	const gap, limit = "reject-no-endpoints: cannot", "harness: no clock"
	results := []Result{
		{Case: "full", Status: Pass, Steps: 2},
		{Case: "one-skipped", Status: Pass, Steps: 3, Skipped: []SkippedStep{{2, gap}}},
		{Case: "two-skipped", Status: Pass, Steps: 4, Skipped: []SkippedStep{{2, gap}, {3, limit}, {4, gap}}},
		{Case: "failed-in-part", Status: Fail, Steps: 2, Skipped: []SkippedStep{{1, limit}}, Failures: []string{"step 2 probe 1: x"}},
		{Case: "none", Status: Unsupported, Steps: 1, Skipped: []SkippedStep{{1, gap}}, Reason: gap},
	}
	for _, tc := range []struct {
		result    int
		inTest    string // as Run says it
		inMatrix  string // the case's cell
		partlyRun bool
	}{
		{0, "pass", "| full | pass |", false},
		{1, "pass (2 of 3 steps; step 2 unsupported [reject-no-endpoints: cannot])", "| one-skipped | pass (2 of 3 steps; step 2 unsupported [1]) |", true},
		{2, "pass (1 of 4 steps; steps 2, 4 unsupported [reject-no-endpoints: cannot]; step 3 unsupported [harness: no clock])",
			"| two-skipped | pass (1 of 4 steps; steps 2, 4 unsupported [1]; step 3 unsupported [2]) |", true},
		{3, "FAIL (1 of 2 steps; step 1 unsupported [harness: no clock])", "| failed-in-part | **FAIL** (1 of 2 steps; step 1 unsupported [2]) |", true},
		{4, "unsupported [reject-no-endpoints: cannot]", "| none | unsupported [1] |", false},
	} {
		r := results[tc.result]
		t.Run(r.Case, func(t *testing.T) {
			if got := r.Verdict(inBrackets); got != tc.inTest {
				t.Errorf("verdict %q, want %q", got, tc.inTest)
			}
			if r.Partly() != tc.partlyRun {
				t.Errorf("partly %v, want %v", r.Partly(), tc.partlyRun)
			}
			var b strings.Builder
			var cases []Case
			for _, x := range results {
				cases = append(cases, Case{Name: x.Case, About: "a case", File: "x.yaml"})
			}
			if err := RenderMatrix(&b, cases, []Report{{Harness: "h", Results: results}}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.inMatrix+"\n") {
				t.Errorf("matrix has no row %q:\n%s", tc.inMatrix, b.String())
			}
			for _, note := range []string{"1. " + gap + "\n", "2. " + limit + "\n", "| 3 pass (2 in part), 1 FAIL, 1 unsupported |"} {
				if !strings.Contains(b.String(), note) {
					t.Errorf("matrix lacks %q:\n%s", note, b.String())
				}
			}
		})
	}
	if got, want := (Report{Results: results}).Summary(), "3 pass (2 in part), 1 FAIL, 1 unsupported"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}
