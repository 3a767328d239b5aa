// Package explain says what one node's proxy does with one new
// connection, and why: the graph's routes for it (graph.Snapshot.Routes),
// each joined with its Service's explanation from the tracker that built
// the graph (build.ServiceExplanation), and upstream's masquerade rule.
// It is what `switchyard explain` prints and the conformance harness
// checks against every probe. Its JSON is docs/explain.md's; the two are
// kept in step. It is pure: the snapshot and tracker are its only input.
package explain

import (
	"fmt"
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/tracker"
)

// Explanation is `switchyard explain`'s answer, and its JSON
// (docs/explain.md; keep the two in step).
type Explanation struct {
	Node       string     `json:"node"`
	Connection Connection `json:"connection"`
	// Routes: one per service port with a frontend at the destination
	// (none: the proxy does not touch the connection).
	Routes []Route `json:"routes"`
	// Dataplane: what the dataplane does with it (--dataplane).
	Dataplane *Dataplane `json:"dataplane,omitempty"`
}

type Connection struct {
	From         string `json:"from"`
	To           string `json:"to"` // ip:port/PROTOCOL
	FromThisNode bool   `json:"fromThisNode"`
}

type Route struct {
	ServicePort     string                `json:"servicePort"`
	Frontend        graph.FrontendKind    `json:"frontend"`
	List            graph.ListKind        `json:"list"`
	Policy          string                `json:"policy"` // Cluster or Local: the categorization the list is
	Action          graph.RouteAction     `json:"action"`
	SessionAffinity graph.SessionAffinity `json:"sessionAffinity"`
	Topology        build.Topology        `json:"topology"`
	Fallback        bool                  `json:"terminatingFallback,omitempty"`
	// Masquerade: upstream SNATs the connection to an address of this
	// node (MasqueradeWhy says by which rule); SourceSeen is then "node",
	// else "client". A hairpin endpoint sees "node" whatever this says.
	Masquerade    bool          `json:"masquerade"`
	MasqueradeWhy MasqueradeWhy `json:"masqueradeWhy"`
	SourceSeen    string        `json:"sourceSeen"`
	Endpoints     []Endpoint    `json:"endpoints"`
	OtherFamily   []string      `json:"otherFamily,omitempty"`
	// Disagreement is set when the explanation's endpoints are not the
	// graph's: a bug in switchyard.
	Disagreement string `json:"disagreement,omitempty"`
}

type Endpoint struct {
	Endpoint    string          `json:"endpoint"`
	Node        string          `json:"node,omitempty"`
	Zone        string          `json:"zone,omitempty"`
	Ready       bool            `json:"ready"`
	Serving     bool            `json:"serving"`
	Terminating bool            `json:"terminating"`
	Used        bool            `json:"used"`
	Excluded    build.Exclusion `json:"excluded,omitempty"`
	// Hairpin: the endpoint is the client itself; upstream masquerades
	// such a connection, so it sees "node".
	Hairpin bool `json:"hairpin,omitempty"`
}

// Of answers for c: the graph's routes, each with its Service's
// explanation from the tracker that built the graph.
func Of(snap graph.Snapshot, tr *tracker.Tracker, c graph.Connection) Explanation {
	x := Explanation{Node: snap.Node.Name, Routes: []Route{}, Connection: Connection{From: c.Src.String(),
		To: fmt.Sprintf("%s/%s", netip.AddrPortFrom(c.Dst, c.Port), c.Protocol), FromThisNode: c.FromThisNode}}
	for _, r := range snap.Routes(c) {
		sx, _ := tr.Explain(r.ServicePort.Name.Namespace, r.ServicePort.Name.Name)
		x.Routes = append(x.Routes, route(r, sx, c, snap.Node))
	}
	return x
}

// route joins a route with its port's explanation in its family.
func route(r graph.Route, sx build.ServiceExplanation, c graph.Connection, node graph.Node) Route {
	sp := r.ServicePort
	why := masquerade(sp, r.Frontend, c, node)
	er := Route{ServicePort: sp.Name.String(), Frontend: r.Frontend, List: r.List, Action: r.Action,
		SessionAffinity: sp.SessionAffinity, Masquerade: why.Masquerades(), MasqueradeWhy: why, SourceSeen: why.sourceSeen(),
		Endpoints: []Endpoint{}}
	px, _ := portOf(sx, sp.Name)
	fx, ok := familyOf(px, graph.FamilyOf(c.Dst))
	if !ok {
		er.Disagreement = "the Service's explanation has no such port and family"
		return er
	}
	er.Policy = fx.Internal
	switch r.List {
	case graph.ListExternal:
		er.Policy = fx.External
	case graph.ListShortCircuit:
		er.Policy = build.ListCluster
	}
	er.Topology, er.Fallback = fx.Topology, fx.ClusterFallback && er.Policy == build.ListCluster
	used, inGraph := 0, map[netip.AddrPort]bool{}
	for _, e := range r.Endpoints {
		inGraph[e.AddrPort()] = true
	}
	for _, v := range fx.Endpoints {
		e := v.Endpoint
		ee := Endpoint{Endpoint: e.String(), Node: e.Node(), Zone: e.Zone(), Ready: e.Ready, Serving: e.Serving,
			Terminating: e.Terminating, Used: v.InCluster, Excluded: v.NotCluster, Hairpin: e.IP == c.Src}
		if er.Policy == build.ListLocal {
			ee.Used, ee.Excluded = v.InLocal, v.NotLocal
		}
		if ee.Used != inGraph[e.AddrPort()] {
			er.Disagreement = fmt.Sprintf("endpoint %s: explained used=%v, the graph says otherwise", e, ee.Used)
		}
		er.Endpoints = append(er.Endpoints, ee)
		if ee.Used {
			used++
		}
	}
	if used != len(inGraph) && er.Disagreement == "" {
		er.Disagreement = fmt.Sprintf("%d endpoint(s) explained as used, the graph has %d", used, len(inGraph))
	}
	for _, ap := range px.OtherFamily {
		er.OtherFamily = append(er.OtherFamily, ap.String())
	}
	return er
}

// portOf finds a port in a Service's explanation.
func portOf(sx build.ServiceExplanation, name graph.ServicePortName) (build.PortExplanation, bool) {
	for _, p := range sx.Ports {
		if p.Name == name {
			return p, true
		}
	}
	return build.PortExplanation{}, false
}

// familyOf finds a family in a port's explanation.
func familyOf(px build.PortExplanation, fam graph.IPFamily) (build.FamilyExplanation, bool) {
	for _, f := range px.Families {
		if f.Family == fam {
			return f, true
		}
	}
	return build.FamilyExplanation{}, false
}
