package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

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
		return usageError{fmt.Errorf("--dataplane %q: this binary has no model of it to ask offline (hns has its simulator; ovs traces its live bridge: ask the running switchyard, --running ADDR --dataplane ovs)", name)}
	}
	r, err := t.Trace(ctx, snap, c, traceConnections)
	if err != nil {
		return err
	}
	x.Dataplane = dataplaneAnswer(name, true, r, *x)
	return nil
}

// traceLive asks the running driver d, named name, what its dataplane
// does with c (dataplanes.LiveTracer). A driver that cannot be asked is
// a usage error; a trace that fails is said in the answer.
func traceLive(ctx context.Context, name string, d dataplanes.Driver, c graph.Connection, x *explain.Explanation) error {
	lt, ok := d.(dataplanes.LiveTracer)
	if !ok {
		return fmt.Errorf("the %s driver cannot trace its live dataplane (offline, --file with --dataplane %s asks a model if it has one)", name, name)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	r, err := lt.TraceLive(ctx, c, traceConnections)
	if err != nil {
		x.Dataplane = &explain.Dataplane{Name: name, Error: err.Error()}
		return nil
	}
	x.Dataplane = dataplaneAnswer(name, false, r, *x)
	if c, ok := d.(dataplanes.Counter); ok {
		x.Dataplane.Counts = countsOf(ctx, c, x.Routes)
	}
	return nil
}

// countsOf is what the dataplane has counted for the routes' service
// ports (nil when it cannot say: the trace stands without).
func countsOf(ctx context.Context, c dataplanes.Counter, routes []explain.Route) map[string]explain.Counts {
	all, err := c.Counters(ctx)
	if err != nil {
		return nil
	}
	out := map[string]explain.Counts{}
	for sp, n := range all {
		name := sp.String()
		if !slices.ContainsFunc(routes, func(r explain.Route) bool { return r.ServicePort == name }) {
			continue
		}
		k := explain.Counts{Connections: n.Connections, Rejected: n.Rejected, Dropped: n.Dropped, Endpoints: map[string]uint64{}}
		for ep, m := range n.Endpoints {
			k.Endpoints[ep.String()] = m
		}
		out[name] = k
	}
	return out
}

// dataplaneAnswer is a dataplane's trace next to the core's answer x. A
// source other than upstream's is a disagreement when the driver declares
// upstream's sources, and a note naming the driver's declared gap when it
// does not.
func dataplaneAnswer(name string, simulated bool, r dataplanes.Trace, x explain.Explanation) *explain.Dataplane {
	dp := &explain.Dataplane{Name: name, Simulated: simulated, Model: r.Model, Connections: traceConnections, Reached: r.Reached,
		SrcSeen: r.SrcSeen, DSR: r.DSR, Note: r.Note, Path: r.Path, Disagreement: explain.DataplaneDisagreement(x.Routes, r.Backends)}
	src := explain.SourceDisagreement(x, r.SrcSeen)
	if src == "" {
		return dp
	}
	if f, err := dataplanes.Get(name); err == nil && !f.Capabilities().Has(dataplanes.UpstreamSources) {
		dp.Note = strings.TrimPrefix(dp.Note+"; ", "; ") + src + ": by design, " + f.Capabilities().Reason(dataplanes.UpstreamSources)
		return dp
	}
	dp.Disagreement = strings.TrimPrefix(dp.Disagreement+"; ", "; ") + src
	return dp
}
