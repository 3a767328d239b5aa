package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// TestConformance runs switchyard's conformance cases over this driver.
// The driver's dataplane is a file an external agent reads, so the
// harness answers probes by reading the file back and applying the
// suite's reference reading of a graph (conformance.Evaluate): it checks
// that what this driver publishes is, case by case, what traffic should
// do. A driver with packets of its own would implement
// conformance.Harness with real probes instead (see ovsharness).
func TestConformance(t *testing.T) {
	cases, err := conformance.Cases()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "graph.json")
	f := &Factory{}
	fs := pflag.NewFlagSet("switchyard", pflag.ContinueOnError)
	f.AddFlags(fs)
	if err := fs.Parse([]string{"--file-export-path=" + path}); err != nil {
		t.Fatal(err)
	}
	d, err := f.New(context.Background(), dataplanes.Env{})
	if err != nil {
		t.Fatal(err)
	}
	h := &conformance.ModelHarness{HarnessName: "file-export", F: f, D: d, Graph: func() (graph.Snapshot, error) {
		var s graph.Snapshot
		b, err := os.ReadFile(path)
		if err != nil {
			return s, err
		}
		return s, json.Unmarshal(b, &s)
	}}
	conformance.Run(t, h, cases)
}
