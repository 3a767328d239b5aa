package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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

// Summary counts the verdicts: "40 pass, 0 FAIL, 4 unsupported".
func (r Report) Summary() string {
	n := map[Status]int{}
	for _, x := range r.Results {
		n[x.Status]++
	}
	return fmt.Sprintf("%d pass, %d FAIL, %d unsupported", n[Pass], n[Fail], n[Unsupported])
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
// pass, FAIL, unsupported (with a numbered reason below the table), or
// "not run" when a harness has no result for the case.
func RenderMatrix(w io.Writer, cases []Case, reps []Report) error {
	var b strings.Builder
	b.WriteString("# Conformance matrix\n\n")
	b.WriteString("Written by `make conformance` (part of `make test`) from the cases in\n")
	b.WriteString("`conformance/cases/`; see [conformance/README.md](../conformance/README.md) for what each\n")
	b.WriteString("harness is and how a driver of your own runs the same cases. A case a driver\n")
	b.WriteString("declares it cannot honour, or a harness cannot probe, is *unsupported* with the\n")
	b.WriteString("reason below; it is never counted as a pass.\n\n")

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
	totals := make([]map[Status]int, len(reps))
	for i := range totals {
		totals[i] = map[Status]int{}
	}
	for _, c := range cases {
		fmt.Fprintf(&b, "| %s |", c.Name)
		for i, rep := range reps {
			k := slices.IndexFunc(rep.Results, func(r Result) bool { return r.Case == c.Name })
			if k < 0 {
				b.WriteString(" not run |")
				continue
			}
			res := rep.Results[k]
			totals[i][res.Status]++
			switch res.Status {
			case Unsupported:
				n := slices.Index(reasons, res.Reason)
				if n < 0 {
					reasons = append(reasons, res.Reason)
					n = len(reasons) - 1
				}
				fmt.Fprintf(&b, " unsupported [%d] |", n+1)
			case Fail:
				b.WriteString(" **FAIL** |")
			default:
				b.WriteString(" pass |")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("| **total** |")
	for i := range reps {
		fmt.Fprintf(&b, " %d pass, %d FAIL, %d unsupported |", totals[i][Pass], totals[i][Fail], totals[i][Unsupported])
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
