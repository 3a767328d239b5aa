package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// explainedDataplane is what a dataplane does with the connection, next
// to the core's answer.
type explainedDataplane struct {
	Name string `json:"name"`
	// Simulated: the answer is a model's (Model says which), not the live
	// dataplane's.
	Simulated   bool           `json:"simulated"`
	Model       string         `json:"model,omitempty"`
	Connections int            `json:"connections"`
	Reached     map[string]int `json:"reached"` // backend ip:port, or what became of the packets, to a count
	SrcSeen     string         `json:"srcSeen,omitempty"`
	DSR         bool           `json:"dsr,omitempty"`
	// Disagreement: the dataplane sent a connection where the graph does
	// not (a bug), or none where it forwards.
	Disagreement string `json:"disagreement,omitempty"`
	// Note: how the dataplane's answer differs by design (a capability
	// gap its driver declares).
	Note string `json:"note,omitempty"`
}

// traceConnections is how many connections (another source port each)
// a trace sends.
const traceConnections = 64

// traceOffline asks the named driver's model of its dataplane
// (dataplanes.Tracer) what becomes of the connection.
func traceOffline(ctx context.Context, name string, snap graph.Snapshot, c graph.Connection, x *explanation) error {
	t, ok := dataplanes.TracerFor(name)
	if !ok {
		return usageError{fmt.Errorf("--dataplane %q: this binary has no model of it to ask offline (hns has its simulator; ovs traces its live bridge, on the node)", name)}
	}
	r, err := t.Trace(ctx, snap, c, traceConnections)
	if err != nil {
		return err
	}
	x.Dataplane = &explainedDataplane{Name: name, Simulated: true, Model: r.Model, Connections: traceConnections, Reached: r.Reached,
		SrcSeen: r.SrcSeen, DSR: r.DSR, Note: r.Note, Disagreement: disagreement(x.Routes, r.Backends)}
	return nil
}

// disagreement compares the backends a dataplane reached with the
// routes' used endpoints ("" when they agree).
func disagreement(routes []explainedRoute, reached []string) string {
	var used []string
	forwards := false
	for _, r := range routes {
		if r.Action != graph.Forward {
			continue
		}
		forwards = true
		for _, e := range r.Endpoints {
			if e.Used {
				used = append(used, e.Endpoint)
			}
		}
	}
	var stray []string
	for _, b := range reached {
		if !slices.Contains(used, b) {
			stray = append(stray, b)
		}
	}
	switch {
	case len(stray) > 0:
		return "reached " + strings.Join(stray, ", ") + ", which the graph does not use"
	case forwards && len(reached) == 0:
		return "the graph forwards the connection; the dataplane reached no endpoint"
	}
	return ""
}
