package dataplanes

import (
	"context"
	"fmt"
	"sync"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// Tracer says what a dataplane would do with new connections on a node's
// graph, without the dataplane: a model of it (`switchyard explain
// --dataplane NAME`). A driver offers one with RegisterTracer; the
// command compares its answer with the graph's.
type Tracer interface {
	Trace(ctx context.Context, s graph.Snapshot, c graph.Connection, connections int) (Trace, error)
}

// Trace is what a dataplane, or its model, did with connections like one
// (another source port each).
type Trace struct {
	// Model says what answered (a simulator and what it assumes).
	Model string
	// Reached counts, by outcome, where the connections went: a backend
	// ip:port, or what became of them.
	Reached map[string]int
	// Backends are the backends reached, sorted.
	Backends []string
	// SrcSeen is the source the backends see; DSR whether they answer the
	// client directly.
	SrcSeen string
	DSR     bool
	// Note says how the dataplane differs by design (a declared gap).
	Note string
}

var (
	tracersMu sync.RWMutex
	tracers   = map[string]Tracer{}
)

// RegisterTracer offers a model of the named driver's dataplane; call it
// from an init function. A second one for a name panics.
func RegisterTracer(name string, t Tracer) {
	tracersMu.Lock()
	defer tracersMu.Unlock()
	if _, dup := tracers[name]; dup || t == nil {
		panic(fmt.Sprintf("dataplanes: tracer %q registered twice, or nil", name))
	}
	tracers[name] = t
}

// TracerFor returns the named driver's tracer, if this binary has one.
func TracerFor(name string) (Tracer, bool) {
	tracersMu.RLock()
	defer tracersMu.RUnlock()
	t, ok := tracers[name]
	return t, ok
}
