// Command conformance-matrix writes the conformance matrix (case x
// harness) from the reports the harness tests leave in a directory
// (SWITCHYARD_CONFORMANCE_OUT), prints it, and fails when a harness that
// should have reported did not, or when any case failed.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/switchyard-proxy/switchyard/conformance"
)

func main() {
	reports := flag.String("reports", "bin/conformance", "directory holding one JSON report per harness")
	out := flag.String("out", "docs/conformance.md", "where to write the Markdown matrix")
	want := flag.String("want", "", "comma-separated harnesses that must have reported")
	flag.Parse()
	if err := run(*reports, *out, *want); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-matrix:", err)
		os.Exit(1)
	}
}

func run(dir, out, want string) error {
	cases, err := conformance.Cases()
	if err != nil {
		return err
	}
	reps, err := conformance.ReadReports(dir)
	if err != nil {
		return err
	}
	var missing []string
	for _, w := range strings.Split(want, ",") {
		if w != "" && !slices.ContainsFunc(reps, func(r conformance.Report) bool { return r.Harness == w }) {
			missing = append(missing, w)
		}
	}
	var b bytes.Buffer
	if err := conformance.RenderMatrix(&b, cases, reps); err != nil {
		return err
	}
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		return err
	}
	os.Stdout.Write(b.Bytes())
	for _, r := range reps {
		fmt.Printf("%s: %s\n", r.Harness, r.Summary())
	}
	if len(missing) > 0 {
		return fmt.Errorf("no report from %s", strings.Join(missing, ", "))
	}
	for _, r := range reps {
		for _, x := range r.Results {
			if x.Status == conformance.Fail {
				return fmt.Errorf("%s failed %s (see the test output above)", r.Harness, x.Case)
			}
		}
	}
	return nil
}
