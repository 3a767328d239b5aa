package conformance

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// recorder is a driver that keeps the graph it is given: with
// ModelHarness it checks the cases against the core alone.
type recorder struct {
	mu   sync.Mutex
	node graph.Node
	idx  graph.Index
	// forgetRemovals breaks the driver on purpose: deletions in deltas are
	// ignored, as a buggy driver might.
	forgetRemovals bool
}

func (r *recorder) Sync(_ context.Context, s graph.Snapshot) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.node, r.idx = s.Node, graph.IndexOf(s.ServicePorts)
	return nil
}

func (r *recorder) Apply(_ context.Context, d graph.Delta) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d.Node != nil {
		r.node = *d.Node
	}
	if r.forgetRemovals {
		d.Removed = nil
	}
	r.idx.Apply(d)
	return nil
}

func (r *recorder) Cleanup(context.Context) error { return nil }
func (r *recorder) Close() error                  { return nil }

func (r *recorder) graph() (graph.Snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return graph.Snapshot{Node: r.node, ServicePorts: r.idx.Sorted()}, nil
}

type allFactory struct{}

func (allFactory) Description() string { return "records the graph" }
func (allFactory) Capabilities() dataplanes.Capabilities {
	return dataplanes.Capabilities{Supported: dataplanes.All}
}
func (allFactory) AddFlags(*pflag.FlagSet) {}
func (allFactory) New(context.Context, dataplanes.Env) (dataplanes.Driver, error) {
	return &recorder{}, nil
}
func (allFactory) Render(io.Writer, dataplanes.Env, graph.Snapshot) error { return nil }

func modelHarness(name string, r *recorder) *ModelHarness {
	return &ModelHarness{HarnessName: name, F: allFactory{}, D: r, Graph: r.graph}
}

// TestCasesAgainstTheCore runs every case on the graph the core computes,
// read by Evaluate: the cases' expectations agree with the core.
func TestCasesAgainstTheCore(t *testing.T) {
	cases, err := Cases()
	if err != nil {
		t.Fatal(err)
	}
	Run(t, modelHarness("graph-model", &recorder{}), cases)
}
