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
	// Path is the way the first connection took through the dataplane,
	// step by step, when the dataplane can say (OVS: table by table).
	Path []TraceStep
}

// TraceStep is one step of a connection's way through a dataplane.
type TraceStep struct {
	Table string `json:"table"`           // where (OVS: the pipeline's table name)
	Match string `json:"match,omitempty"` // what matched it there (OVS: the flow's match)
	Did   string `json:"did,omitempty"`   // what of note it did (a group's choice, a NAT, an output, a drop)
}

// LiveTracer is a running driver that asks its own dataplane what it does
// with new connections like c (another source port each): `switchyard
// explain --running ADDR --dataplane NAME` reaches it through the running
// switchyard's /explain. OVS implements it with ofproto/trace through the
// live bridge.
type LiveTracer interface {
	TraceLive(ctx context.Context, c graph.Connection, connections int) (Trace, error)
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
