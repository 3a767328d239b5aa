package conformance

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/explain"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// prediction is what `switchyard explain` says becomes of a probe's
// connections, in the world's names.
type prediction struct {
	x explain.Explanation
	// reach: the identities ("p1:8080") of the endpoints the forwarding
	// routes use; with no route, the member the destination is.
	reach []string
	// forwards: some route forwards; else every route's action holds.
	forwards bool
	actions  []graph.RouteAction
	// sources: the driver declares upstream's sources
	// (dataplanes.UpstreamSources), so the sources endpoints see are
	// checked too.
	sources bool
}

// predict asks explain, over the graph the driver was given, about the
// probe's connection.
func predict(snap graph.Snapshot, tr *tracker.Tracker, caps dataplanes.Capabilities, p Probe) prediction {
	c := graph.Connection{Src: p.Src, Dst: p.Dst.Addr(), Port: p.Dst.Port(), Protocol: p.Protocol,
		FromThisNode: p.FromKind == NodeSource || p.FromKind == LocalPod || p.FromKind == ClientPod}
	pr := prediction{x: explain.Of(snap, tr, c), sources: caps.Has(dataplanes.UpstreamSources)}
	if len(pr.x.Routes) == 0 {
		if name := World.named(p.Dst.Addr()); name != "" {
			pr.reach = []string{Identity(name, p.Dst.Port())}
		}
		return pr
	}
	for _, r := range pr.x.Routes {
		pr.actions = append(pr.actions, r.Action)
		if r.Action != graph.Forward {
			continue
		}
		pr.forwards = true
		for _, e := range r.Endpoints {
			if e.Used {
				pr.reach = append(pr.reach, identityOf(e))
			}
		}
	}
	return pr
}

// mismatch compares the answers with the prediction ("" when they agree):
// an answer from an endpoint explain does not name, an answer or a silence
// where it rejects, an answer or a refusal where it drops, or, when the
// driver declares upstream's sources, a source the endpoint saw that
// upstream's masquerade rule does not give. Drivers that SNAT more (HNS
// without DSR: docs/hns.md S2) are judged on sources only by the cases
// that expect theirs.
func (pr prediction) mismatch(p Probe, as []Answer) string {
	for _, a := range as {
		switch {
		case a.Outcome == Answered && !slices.Contains(pr.reach, a.Identity):
			return fmt.Sprintf("expected (explain) %s; saw %s answer", pr, a.Identity)
		case a.Outcome == Answered && pr.forwards && pr.sources:
			if msg := pr.sourceMismatch(p, a); msg != "" {
				return msg
			}
		case len(pr.x.Routes) == 0 || pr.forwards:
		case a.Outcome == Rejected && !slices.Contains(pr.actions, graph.RejectNoEndpoint):
			return fmt.Sprintf("expected (explain) %s; saw the connection refused (%s)", pr, a.Detail)
		case a.Outcome != Rejected && !slices.ContainsFunc(pr.actions, func(x graph.RouteAction) bool { return x != graph.RejectNoEndpoint }):
			return fmt.Sprintf("expected (explain) %s; saw the connection %s (%s)", pr, a.Outcome, a.Detail)
		}
	}
	return ""
}

// sourceMismatch checks the source an answering endpoint saw: the
// client's own when explain says "client", another one when it says
// "node" or the endpoint is the client (a hairpin). The node's own
// connections are masqueraded to an address the check cannot tell from
// the client's, so only their "client" is checked.
func (pr prediction) sourceMismatch(p Probe, a Answer) string {
	if !a.Source.IsValid() {
		return ""
	}
	seen := explain.SourceClient
	if a.Source != p.Src {
		seen = explain.SourceNode
	}
	for _, r := range pr.x.Routes {
		if r.Action != graph.Forward {
			continue
		}
		want := r.SourceSeen
		if slices.ContainsFunc(r.Endpoints, func(e explain.Endpoint) bool { return e.Hairpin && e.Used && identityOf(e) == a.Identity }) {
			want = explain.SourceNode
		}
		if want == seen || (p.FromKind == NodeSource && want == explain.SourceNode) {
			return ""
		}
		return fmt.Sprintf("expected (explain) the endpoint to see the %s's address (%s); saw %s see %v (%s)", want, r.MasqueradeWhy, a.Identity, a.Source, seen)
	}
	return ""
}

// String renders the prediction for a failure message.
func (pr prediction) String() string {
	if len(pr.x.Routes) == 0 {
		return "no Service: the connection is left alone, to " + strings.Join(pr.reach, "|")
	}
	if pr.forwards {
		return "forward to " + strings.Join(pr.reach, "|")
	}
	var acts []string
	for _, a := range pr.actions {
		acts = append(acts, string(a))
	}
	return strings.Join(acts, ", ")
}

func identityOf(e explain.Endpoint) string {
	ap := netip.MustParseAddrPort(e.Endpoint)
	return Identity(World.named(ap.Addr()), ap.Port())
}
