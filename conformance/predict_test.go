package conformance

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/explain"
	"github.com/switchyard-proxy/switchyard/core/graph"
)

// The check of answers against explain: each way they can disagree, and
// the agreements around them.
func TestPredictionMismatch(t *testing.T) {
	c := netip.MustParseAddr("10.244.1.7")
	p := Probe{From: "c", FromKind: ClientPod, Src: c, Dst: netip.MustParseAddrPort("10.96.0.1:80"), Protocol: graph.TCP}
	node := p
	node.From, node.FromKind, node.Src = "node", NodeSource, netip.MustParseAddr("192.168.100.10")
	forward := func(seen string, eps ...explain.Endpoint) prediction {
		pr := prediction{forwards: true, sources: true, actions: []graph.RouteAction{graph.Forward},
			x: explain.Explanation{Routes: []explain.Route{{Action: graph.Forward, SourceSeen: seen, MasqueradeWhy: "Rule", Endpoints: eps}}}}
		for _, e := range eps {
			if e.Used {
				pr.reach = append(pr.reach, identityOf(e))
			}
		}
		return pr
	}
	p1 := explain.Endpoint{Endpoint: "10.244.1.5:8080", Used: true}
	r1 := explain.Endpoint{Endpoint: "10.244.2.10:8080"}
	hairpin := explain.Endpoint{Endpoint: "10.244.1.7:8080", Used: true, Hairpin: true}
	answer := func(id, src string) Answer {
		return Answer{Outcome: Answered, Identity: id, Source: netip.MustParseAddr(src)}
	}
	drop := prediction{actions: []graph.RouteAction{graph.DropNoEndpoint}, x: explain.Explanation{Routes: []explain.Route{{Action: graph.DropNoEndpoint}}}}
	reject := prediction{actions: []graph.RouteAction{graph.RejectNoEndpoint}, x: explain.Explanation{Routes: []explain.Route{{Action: graph.RejectNoEndpoint}}}}
	alone := prediction{reach: []string{"p1:8080"}}
	for _, tc := range []struct {
		name string
		pr   prediction
		p    Probe
		a    Answer
		want string // a part of the message; "" when they agree
	}{
		{"a used endpoint", forward(explain.SourceClient, p1, r1), p, answer("p1:8080", "10.244.1.7"), ""},
		{"an unused endpoint", forward(explain.SourceClient, p1, r1), p, answer("r1:8080", "10.244.1.7"), "saw r1:8080 answer"},
		{"another port", forward(explain.SourceClient, p1), p, answer("p1:8081", "10.244.1.7"), "saw p1:8081 answer"},
		{"masqueraded where upstream is not", forward(explain.SourceClient, p1), p, answer("p1:8080", "10.244.1.1"), "see 10.244.1.1 (node)"},
		{"not masqueraded where upstream is", forward(explain.SourceNode, p1), p, answer("p1:8080", "10.244.1.7"), "see 10.244.1.7 (client)"},
		{"masqueraded as upstream", forward(explain.SourceNode, p1), p, answer("p1:8080", "10.244.1.1"), ""},
		{"a hairpin is masqueraded", forward(explain.SourceClient, hairpin), p, answer("c:8080", "10.244.1.1"), ""},
		{"a hairpin not masqueraded", forward(explain.SourceClient, hairpin), p, answer("c:8080", "10.244.1.7"), "(client)"},
		{"the node's own masquerade is not told apart", forward(explain.SourceNode, p1), node, answer("p1:8080", "192.168.100.10"), ""},
		{"an answer where explain drops", drop, p, answer("p1:8080", "10.244.1.7"), "saw p1:8080 answer"},
		{"a refusal where explain drops", drop, p, Answer{Outcome: Rejected}, "refused"},
		{"a refusal where explain rejects", reject, p, Answer{Outcome: Rejected}, ""},
		{"silence where explain rejects", reject, p, Answer{Outcome: Dropped}, "saw the connection dropped"},
		{"silence where explain drops", drop, p, Answer{Outcome: Dropped}, ""},
		{"no Service: the destination answers", alone, p, answer("p1:8080", "10.244.1.7"), ""},
		{"no Service: another answers", alone, p, answer("p2:8080", "10.244.1.7"), "left alone"},
	} {
		got := tc.pr.mismatch(tc.p, []Answer{tc.a})
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
