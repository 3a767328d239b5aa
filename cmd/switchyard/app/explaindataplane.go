package app

import (
	"context"
	"fmt"

	"github.com/switchyard-proxy/switchyard/core/explain"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// traceConnections is how many connections (another source port each)
// a trace sends.
const traceConnections = 64

// traceOffline asks the named driver's model of its dataplane
// (dataplanes.Tracer) what becomes of the connection.
func traceOffline(ctx context.Context, name string, snap graph.Snapshot, c graph.Connection, x *explain.Explanation) error {
	t, ok := dataplanes.TracerFor(name)
	if !ok {
		return usageError{fmt.Errorf("--dataplane %q: this binary has no model of it to ask offline (hns has its simulator; ovs traces its live bridge, on the node)", name)}
	}
	r, err := t.Trace(ctx, snap, c, traceConnections)
	if err != nil {
		return err
	}
	x.Dataplane = &explain.Dataplane{Name: name, Simulated: true, Model: r.Model, Connections: traceConnections, Reached: r.Reached,
		SrcSeen: r.SrcSeen, DSR: r.DSR, Note: r.Note, Disagreement: explain.DataplaneDisagreement(x.Routes, r.Backends)}
	return nil
}
