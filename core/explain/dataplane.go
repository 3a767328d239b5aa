package explain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// Dataplane is what a dataplane does with the connection, next
// to the core's answer.
type Dataplane struct {
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
	// Path: the first connection's way through the dataplane, step by
	// step, when it can say (OVS: table by table, in the pipeline's names).
	Path []dataplanes.TraceStep `json:"path,omitempty"`
	// Error: the dataplane could not be asked, and why (the rest of the
	// answer, the core's, stands).
	Error string `json:"error,omitempty"`
	// Counts: what the dataplane has counted so far for the routes'
	// service ports, by service port (a driver that counts:
	// dataplanes.Counter).
	Counts map[string]Counts `json:"counts,omitempty"`
}

// Counts is what a dataplane counted for one service port.
type Counts struct {
	Connections uint64            `json:"connections"`
	Rejected    uint64            `json:"rejected"`
	Dropped     uint64            `json:"dropped"`
	Endpoints   map[string]uint64 `json:"endpoints,omitempty"` // ip:port to new connections
}

// DataplaneDisagreement compares the backends a dataplane reached with the
// routes' used endpoints ("" when they agree).
func DataplaneDisagreement(routes []Route, reached []string) string {
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

// SourceDisagreement compares the source a dataplane says its backends
// saw (srcSeen) with upstream's masquerade rule ("" when they agree, or
// cannot be told apart): the client's address kept where upstream
// masquerades a connection from outside this node, or another address
// where upstream keeps the client's. A used hairpin endpoint (SNATed by
// rule) and the node's own connections (masqueraded to the address they
// came from) are not judged.
func SourceDisagreement(x Explanation, srcSeen string) string {
	for _, r := range x.Routes {
		if r.Action != graph.Forward || srcSeen == "" {
			continue
		}
		if slices.ContainsFunc(r.Endpoints, func(e Endpoint) bool { return e.Used && e.Hairpin }) {
			return ""
		}
		kept := srcSeen == x.Connection.From
		switch {
		case r.SourceSeen == SourceClient && !kept:
			return fmt.Sprintf("the backends see the source %s; upstream keeps the client's (%s)", srcSeen, r.MasqueradeWhy)
		case r.SourceSeen == SourceNode && kept && !x.Connection.FromThisNode:
			return fmt.Sprintf("the backends see the client's address %s; upstream masquerades it (%s)", srcSeen, r.MasqueradeWhy)
		}
		return ""
	}
	return ""
}
