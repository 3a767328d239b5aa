package app

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
	"github.com/switchyard-proxy/switchyard/hns/hnstrace"
)

// explainedDataplane is what a dataplane does with the connection, next
// to the core's answer.
type explainedDataplane struct {
	Name string `json:"name"`
	// Simulated: the verdict is a model's (hns: the HNS simulator, on a
	// Windows Server build it names), not the live dataplane's.
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

// traceHNS asks the HNS simulator, programmed by the HNS driver with the
// graph, what becomes of the connection.
func traceHNS(ctx context.Context, snap graph.Snapshot, c graph.Connection, x *explanation) error {
	dir, err := os.MkdirTemp("", "switchyard-explain-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r, err := hnstrace.Trace(ctx, snap, hnssim.Windows2025, c, traceConnections, dir)
	if err != nil {
		return err
	}
	dp := &explainedDataplane{Name: "hns", Simulated: true, Connections: r.Connections, Reached: r.Verdicts, SrcSeen: r.SrcSeen, DSR: r.DSR,
		Model: fmt.Sprintf("the HNS simulator (hnssim), Windows Server build %d, an l2bridge network: its rules name their sources or say assumed", r.Build)}
	dp.Disagreement = disagreement(x.Routes, r.Backends())
	for _, route := range x.Routes {
		if route.Action == graph.RejectNoEndpoint {
			dp.Note = "HNS cannot reject (a gap the driver declares): the client is not refused, its packets go nowhere"
		}
	}
	x.Dataplane = dp
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
