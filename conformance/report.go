package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Report is every case's result for one harness.
type Report struct {
	Harness string   `json:"harness"`
	Results []Result `json:"results"`
}

// OutEnv names the directory reports are written to (one JSON file per
// harness) for the matrix; unset, nothing is written.
const OutEnv = "SWITCHYARD_CONFORMANCE_OUT"

// Summary counts the verdicts: "40 pass (1 in part), 0 FAIL, 4 unsupported".
func (r Report) Summary() string { return summarize(r.Results) }

// summarize counts verdicts; a pass judged on some steps only is counted
// as a pass and said to be one in part.
func summarize(results []Result) string {
	n := map[Status]int{}
	inPart := 0
	for _, x := range results {
		n[x.Status]++
		if x.Status == Pass && x.Partly() {
			inPart++
		}
	}
	pass := fmt.Sprintf("%d pass", n[Pass])
	if inPart > 0 {
		pass += fmt.Sprintf(" (%d in part)", inPart)
	}
	return fmt.Sprintf("%s, %d FAIL, %d unsupported", pass, n[Fail], n[Unsupported])
}

// Verdict says the result in words: "pass", "FAIL", "unsupported [5]",
// and for a case judged on some steps only, which: "pass (2 of 3 steps;
// step 3 unsupported [5])". label writes a reason: a note number in the
// matrix, the reason itself in brackets in the test output.
func (r Result) Verdict(label func(reason string) string) string {
	switch {
	case r.Status == Unsupported:
		return "unsupported " + label(r.Reason)
	case !r.Partly():
		return string(r.Status)
	}
	parts := []string{fmt.Sprintf("%d of %d steps", r.Steps-len(r.Skipped), r.Steps)}
	var reasons []string
	steps := map[string][]string{}
	for _, s := range r.Skipped {
		if _, seen := steps[s.Reason]; !seen {
			reasons = append(reasons, s.Reason)
		}
		steps[s.Reason] = append(steps[s.Reason], strconv.Itoa(s.Step))
	}
	for _, why := range reasons {
		word := "step"
		if len(steps[why]) > 1 {
			word = "steps"
		}
		parts = append(parts, fmt.Sprintf("%s %s unsupported %s", word, strings.Join(steps[why], ", "), label(why)))
	}
	return fmt.Sprintf("%s (%s)", r.Status, strings.Join(parts, "; "))
}

// WriteIfAsked writes the report to $SWITCHYARD_CONFORMANCE_OUT/<harness>.json.
func (r Report) WriteIfAsked() error {
	dir := os.Getenv(OutEnv)
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, r.Harness+".json"), b, 0o644)
}

// ReadReports reads every report in a directory, sorted by harness.
func ReadReports(dir string) ([]Report, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var reps []Report
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		var r Report
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		reps = append(reps, r)
	}
	slices.SortFunc(reps, func(a, b Report) int { return strings.Compare(a.Harness, b.Harness) })
	return reps, nil
}

// RenderMatrix writes the case x harness matrix as Markdown: a cell is
// pass, FAIL, unsupported (with a numbered reason below the table), a
// pass or FAIL judged on some steps only (which steps were not, and the
// numbered reason), or "not run" when a harness has no result for the
// case.
func RenderMatrix(w io.Writer, cases []Case, reps []Report) error {
	var b strings.Builder
	b.WriteString("# Conformance matrix\n\n")
	b.WriteString("Written by `make conformance` (part of `make test`) from the cases in\n")
	b.WriteString("`conformance/cases/`; see [conformance/README.md](../conformance/README.md) for what each\n")
	b.WriteString("harness is and how a driver of your own runs the same cases. A case a driver\n")
	b.WriteString("declares it cannot honour, or a harness cannot probe, is *unsupported* with the\n")
	b.WriteString("reason below; it is never counted as a pass. What a case needs is read from the\n")
	b.WriteString("case itself, step by step: a step that needs what the driver lacks is applied but\n")
	b.WriteString("not judged, and the others are, so \"pass (2 of 3 steps; step 3 unsupported [1])\"\n")
	b.WriteString("is a pass of steps 1 and 2 only.\n\n")

	b.WriteString("| case |")
	for _, r := range reps {
		b.WriteString(" " + r.Harness + " |")
	}
	b.WriteString("\n|---|")
	for range reps {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	var reasons []string
	note := func(reason string) string {
		n := slices.Index(reasons, reason)
		if n < 0 {
			reasons = append(reasons, reason)
			n = len(reasons) - 1
		}
		return fmt.Sprintf("[%d]", n+1)
	}
	shown := make([][]Result, len(reps))
	for _, c := range cases {
		fmt.Fprintf(&b, "| %s |", c.Name)
		for i, rep := range reps {
			k := slices.IndexFunc(rep.Results, func(r Result) bool { return r.Case == c.Name })
			if k < 0 {
				b.WriteString(" not run |")
				continue
			}
			res := rep.Results[k]
			shown[i] = append(shown[i], res)
			cell := res.Verdict(note)
			if res.Status == Fail {
				cell = "**FAIL**" + strings.TrimPrefix(cell, string(Fail))
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("| **total** |")
	for i := range reps {
		b.WriteString(" " + summarize(shown[i]) + " |")
	}
	b.WriteString("\n")
	if len(reasons) > 0 {
		b.WriteString("\n## Why unsupported\n\n")
		for i, r := range reasons {
			fmt.Fprintf(&b, "%d. %s\n", i+1, r)
		}
	}
	b.WriteString("\n## Cases\n\n")
	file := ""
	for _, c := range cases {
		if c.File != file {
			file = c.File
			fmt.Fprintf(&b, "\n### %s\n\n", file)
		}
		fmt.Fprintf(&b, "- **%s**: %s\n", c.Name, strings.TrimSpace(c.About))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
