package build

import (
	"github.com/switchyard-proxy/switchyard/core/object"
	"net/netip"
	"slices"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// cand builds a test candidate from "ip:port" and modifiers.
func cand(addr string, mods ...func(*candidate)) candidate {
	ap := netip.MustParseAddrPort(addr)
	c := candidate{ep: graph.Endpoint{IP: ap.Addr(), Port: ap.Port()}}
	for _, m := range mods {
		m(&c)
	}
	return c
}

func ready(c *candidate)          { c.ep.Ready, c.ep.Serving = true, true }
func local(c *candidate)          { c.ep.Local = true }
func servingTerm(c *candidate)    { c.ep.Serving, c.ep.Terminating = true, true }
func notServingTerm(c *candidate) { c.ep.Terminating = true }
func zones(z ...string) func(*candidate) {
	return func(c *candidate) { c.hints = &object.Hints{ForZones: z, ForNodes: c.nodeHints()} }
}
func nodes(n ...string) func(*candidate) {
	return func(c *candidate) { c.hints = &object.Hints{ForZones: c.zoneHints(), ForNodes: n} }
}

// none marks an expected list as "this policy is not used" (nil).
var none []string

func TestCategorize(t *testing.T) {
	clusterOnly := policyView{}
	cases := []struct {
		name    string
		zone    string
		pv      policyView
		eps     []candidate
		cluster []string // nil: the port must not use Cluster endpoints
		local   []string // nil: the port must not use Local endpoints
		hasAny  bool
	}{{
		name: "zone hints narrow cluster endpoints to this node's zone",
		zone: "zone-a", pv: clusterOnly,
		eps: []candidate{
			cand("10.1.2.3:80", ready, zones("zone-a")), cand("10.1.2.4:80", ready, zones("zone-b")),
			cand("10.1.2.5:80", ready, zones("zone-c")), cand("10.1.2.6:80", ready, zones("zone-a")),
		},
		cluster: []string{"10.1.2.3:80", "10.1.2.6:80"}, local: none, hasAny: true,
	}, {
		name: "node without a zone label ignores zone hints",
		zone: "", pv: clusterOnly,
		eps:     []candidate{cand("10.1.2.3:80", ready, zones("zone-a")), cand("10.1.2.4:80", ready, zones("zone-b"))},
		cluster: []string{"10.1.2.3:80", "10.1.2.4:80"}, local: none, hasAny: true,
	}, {
		name: "node in a zone no endpoint is hinted for gets every endpoint",
		zone: "zone-b", pv: clusterOnly,
		eps:     []candidate{cand("10.1.2.3:80", ready, zones("zone-a"))},
		cluster: []string{"10.1.2.3:80"}, local: none, hasAny: true,
	}, {
		name: "unready endpoint hinted for this zone is left out",
		zone: "zone-a", pv: clusterOnly,
		eps: []candidate{
			cand("10.1.2.3:80", ready, zones("zone-a")), cand("10.1.2.4:80", ready, zones("zone-b")),
			cand("10.1.2.5:80", ready, zones("zone-c")), cand("10.1.2.6:80", zones("zone-a")),
		},
		cluster: []string{"10.1.2.3:80"}, local: none, hasAny: true,
	}, {
		name: "only unready endpoints in this zone: hints ignored",
		zone: "zone-a", pv: clusterOnly,
		eps: []candidate{
			cand("10.1.2.3:80", zones("zone-a")), cand("10.1.2.4:80", ready, zones("zone-b")),
			cand("10.1.2.5:80", ready, zones("zone-c")), cand("10.1.2.6:80", zones("zone-a")),
		},
		cluster: []string{"10.1.2.4:80", "10.1.2.5:80"}, local: none, hasAny: true,
	}, {
		name: "one ready endpoint without hints disables topology",
		zone: "zone-a", pv: clusterOnly,
		eps: []candidate{
			cand("10.1.2.3:80", ready, zones("zone-a")), cand("10.1.2.4:80", ready, zones("zone-b")),
			cand("10.1.2.5:80", ready), cand("10.1.2.6:80", ready, zones("zone-a")),
		},
		cluster: []string{"10.1.2.3:80", "10.1.2.4:80", "10.1.2.5:80", "10.1.2.6:80"}, local: none, hasAny: true,
	}, {
		name: "an endpoint hinted for several zones is kept if any is this zone",
		zone: "zone-c", pv: clusterOnly,
		eps: []candidate{
			cand("10.1.2.3:80", ready, zones("zone-a", "zone-b", "zone-c")), cand("10.1.2.4:80", ready, zones("zone-b", "zone-c")),
			cand("10.1.2.5:80", ready, zones("zone-b", "zone-d")), cand("10.1.2.6:80", ready, zones("zone-c")),
		},
		cluster: []string{"10.1.2.3:80", "10.1.2.4:80", "10.1.2.6:80"}, local: none, hasAny: true,
	}, {
		name: "ETP=Local: topology narrows cluster endpoints but never local ones",
		zone: "zone-a", pv: policyView{etpLocal: true, externallyAccessible: true},
		eps: []candidate{
			cand("10.1.2.3:80", ready, local, zones("zone-a")), cand("10.1.2.4:80", ready, local, zones("zone-b")),
			cand("10.1.2.5:80", ready, zones("zone-c")), cand("10.1.2.6:80", ready, zones("zone-a")),
		},
		cluster: []string{"10.1.2.3:80", "10.1.2.6:80"}, local: []string{"10.1.2.3:80", "10.1.2.4:80"}, hasAny: true,
	}, {
		name: "ITP=Local with a NodePort: topology narrows cluster endpoints but never local ones",
		zone: "zone-a", pv: policyView{itpLocal: true, externallyAccessible: true},
		eps: []candidate{
			cand("10.1.2.3:80", ready, local, zones("zone-a")), cand("10.1.2.4:80", ready, local, zones("zone-b")),
			cand("10.1.2.5:80", ready, zones("zone-c")), cand("10.1.2.6:80", ready, zones("zone-a")),
		},
		cluster: []string{"10.1.2.3:80", "10.1.2.6:80"}, local: []string{"10.1.2.3:80", "10.1.2.4:80"}, hasAny: true,
	}, {
		name: "topology and locality disagree: each list keeps its own",
		zone: "zone-a", pv: policyView{etpLocal: true, externallyAccessible: true},
		eps: []candidate{
			cand("10.0.0.0:80", ready, local, zones("zone-a")), cand("10.0.0.1:80", ready, local, zones("zone-b")),
			cand("10.0.0.2:80", ready, zones("zone-a")), cand("10.0.0.3:80", ready, zones("zone-b")),
		},
		cluster: []string{"10.0.0.0:80", "10.0.0.2:80"}, local: []string{"10.0.0.0:80", "10.0.0.1:80"}, hasAny: true,
	}, {
		name: "ITP=Local with no endpoints at all",
		pv:   policyView{itpLocal: true},
		eps:  nil, cluster: none, local: []string{}, hasAny: false,
	}, {
		name:    "ITP=Local with only remote endpoints: nothing local, but endpoints exist",
		pv:      policyView{itpLocal: true},
		eps:     []candidate{cand("10.0.0.0:80", ready), cand("10.0.0.1:80", ready)},
		cluster: none, local: []string{}, hasAny: true,
	}, {
		name:    "ITP=Local with only local endpoints",
		pv:      policyView{itpLocal: true},
		eps:     []candidate{cand("10.0.0.0:80", ready, local), cand("10.0.0.1:80", ready, local)},
		cluster: none, local: []string{"10.0.0.0:80", "10.0.0.1:80"}, hasAny: true,
	}, {
		name:    "ITP=Local with some local endpoints",
		pv:      policyView{itpLocal: true},
		eps:     []candidate{cand("10.0.0.0:80", ready, local), cand("10.0.0.1:80", ready)},
		cluster: none, local: []string{"10.0.0.0:80"}, hasAny: true,
	}, {
		name:    "Cluster policy, no endpoint ready or serving",
		pv:      clusterOnly,
		eps:     []candidate{cand("10.0.0.0:80"), cand("10.0.0.1:80")},
		cluster: []string{}, local: none, hasAny: false,
	}, {
		name:    "Cluster policy, some endpoints ready",
		pv:      clusterOnly,
		eps:     []candidate{cand("10.0.0.0:80"), cand("10.0.0.1:80", ready)},
		cluster: []string{"10.0.0.1:80"}, local: none, hasAny: true,
	}, {
		name:    "Cluster policy, every endpoint serving and terminating: fall back to them",
		pv:      clusterOnly,
		eps:     []candidate{cand("10.0.0.0:80", servingTerm, local), cand("10.0.0.1:80", servingTerm)},
		cluster: []string{"10.0.0.0:80", "10.0.0.1:80"}, local: none, hasAny: true,
	}, {
		name:    "Cluster policy, terminating but not serving endpoints are never used",
		pv:      clusterOnly,
		eps:     []candidate{cand("10.0.0.0:80", notServingTerm), cand("10.0.0.1:80", notServingTerm)},
		cluster: []string{}, local: none, hasAny: false,
	}, {
		name:    "Cluster policy, ready endpoints win over serving-terminating ones",
		pv:      clusterOnly,
		eps:     []candidate{cand("10.0.0.0:80", servingTerm), cand("10.0.0.1:80", ready)},
		cluster: []string{"10.0.0.1:80"}, local: none, hasAny: true,
	}, {
		name:    "ITP=Local, ETP=Cluster, some endpoints local",
		pv:      policyView{itpLocal: true, externallyAccessible: true},
		eps:     []candidate{cand("10.0.0.0:80", ready, local), cand("10.0.0.1:80", ready)},
		cluster: []string{"10.0.0.0:80", "10.0.0.1:80"}, local: []string{"10.0.0.0:80"}, hasAny: true,
	}, {
		name:    "ITP=Cluster, ETP=Local, some endpoints local",
		pv:      policyView{etpLocal: true, externallyAccessible: true},
		eps:     []candidate{cand("10.0.0.0:80", ready, local), cand("10.0.0.1:80", ready)},
		cluster: []string{"10.0.0.0:80", "10.0.0.1:80"}, local: []string{"10.0.0.0:80"}, hasAny: true,
	}, {
		name:    "ITP=Local, ETP=Local, some endpoints local",
		pv:      policyView{itpLocal: true, etpLocal: true, externallyAccessible: true},
		eps:     []candidate{cand("10.0.0.0:80", ready, local), cand("10.0.0.1:80", ready)},
		cluster: []string{"10.0.0.0:80", "10.0.0.1:80"}, local: []string{"10.0.0.0:80"}, hasAny: true,
	}, {
		name:    "ITP=Local, ETP=Local, all endpoints remote",
		pv:      policyView{itpLocal: true, etpLocal: true, externallyAccessible: true},
		eps:     []candidate{cand("10.0.0.0:80", ready), cand("10.0.0.1:80", ready)},
		cluster: []string{"10.0.0.0:80", "10.0.0.1:80"}, local: []string{}, hasAny: true,
	}, {
		name:    "ITP=Local, ETP=Local, all endpoints remote and serving-terminating",
		pv:      policyView{itpLocal: true, etpLocal: true, externallyAccessible: true},
		eps:     []candidate{cand("10.0.0.0:80", servingTerm), cand("10.0.0.1:80", servingTerm)},
		cluster: []string{"10.0.0.0:80", "10.0.0.1:80"}, local: []string{}, hasAny: true,
	}, {
		name: "ITP=Cluster, ETP=Local, local serving-terminating endpoint kept for local traffic",
		pv:   policyView{etpLocal: true, externallyAccessible: true},
		eps: []candidate{
			cand("10.0.0.0:80", ready), cand("10.0.0.1:80", local),
			cand("10.0.0.2:80", servingTerm, local), cand("10.0.0.3:80", servingTerm),
		},
		cluster: []string{"10.0.0.0:80"}, local: []string{"10.0.0.2:80"}, hasAny: true,
	}, {
		name:    "ITP=Local, internal only: serving-terminating remote endpoints still count as existing",
		pv:      policyView{itpLocal: true},
		eps:     []candidate{cand("10.0.0.0:80", servingTerm)},
		cluster: none, local: []string{}, hasAny: true,
	}, {
		name:    "ETP=Local is ignored when the port is not externally accessible",
		pv:      policyView{etpLocal: true},
		eps:     []candidate{cand("10.0.0.0:80", ready), cand("10.0.0.1:80", ready, local)},
		cluster: []string{"10.0.0.0:80", "10.0.0.1:80"}, local: none, hasAny: true,
	}, {
		name:    "ITP=Local, internal only: no cluster endpoints computed",
		pv:      policyView{itpLocal: true},
		eps:     []candidate{cand("10.0.0.0:80", ready), cand("10.0.0.1:80", ready, local)},
		cluster: none, local: []string{"10.0.0.1:80"}, hasAny: true,
	}, {
		name: "node hints naming this node: PreferSameNode keeps only those",
		zone: "zone-a", pv: clusterOnly,
		eps: []candidate{
			cand("10.0.0.1:80", ready, nodes("node-1"), zones("zone-a")),
			cand("10.0.0.2:80", ready, nodes("node-2"), zones("zone-a")),
			cand("10.0.0.3:80", ready, nodes("node-3"), zones("zone-b")),
		},
		cluster: []string{"10.0.0.1:80"}, local: none, hasAny: true,
	}, {
		name: "node hints not naming this node fall back to zone hints",
		zone: "zone-a", pv: clusterOnly,
		eps: []candidate{
			cand("10.0.0.2:80", ready, nodes("node-2"), zones("zone-a")),
			cand("10.0.0.3:80", ready, nodes("node-3"), zones("zone-b")),
		},
		cluster: []string{"10.0.0.2:80"}, local: none, hasAny: true,
	}, {
		name: "one ready endpoint without node hints: zone hints decide",
		zone: "zone-b", pv: clusterOnly,
		eps: []candidate{
			cand("10.0.0.1:80", ready, nodes("node-1"), zones("zone-a")),
			cand("10.0.0.3:80", ready, zones("zone-b")),
		},
		cluster: []string{"10.0.0.3:80"}, local: none, hasAny: true,
	}, {
		name: "unready endpoint without node hints does not disable PreferSameNode",
		zone: "zone-a", pv: clusterOnly,
		eps: []candidate{
			cand("10.0.0.1:80", ready, nodes("node-1")),
			cand("10.0.0.2:80", ready, nodes("node-2")),
			cand("10.0.0.3:80"),
		},
		cluster: []string{"10.0.0.1:80"}, local: none, hasAny: true,
	}, {
		name: "topology with no ready endpoint at all: serving-terminating fallback ignores hints",
		zone: "zone-a", pv: clusterOnly,
		eps: []candidate{
			cand("10.0.0.1:80", servingTerm, zones("zone-b")),
			cand("10.0.0.2:80", servingTerm, zones("zone-a")),
		},
		cluster: []string{"10.0.0.1:80", "10.0.0.2:80"}, local: none, hasAny: true,
	}}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := categorize(tc.eps, tc.pv, "node-1", tc.zone, nil)
			checkList(t, "cluster", tc.cluster, got.cluster)
			checkList(t, "local", tc.local, got.local)
			if got.hasAny != tc.hasAny {
				t.Errorf("hasAny = %v, want %v", got.hasAny, tc.hasAny)
			}
		})
	}
}

func checkList(t *testing.T, what string, want []string, got []candidate) {
	t.Helper()
	if want == nil {
		if got != nil {
			t.Errorf("%s endpoints = %v, want none (policy not used)", what, names(got))
		}
		return
	}
	if got == nil {
		t.Errorf("%s endpoints = nil (policy not used), want %v", what, want)
		return
	}
	g := names(got)
	w := slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Errorf("%s endpoints = %v, want %v", what, g, w)
	}
}

func names(cs []candidate) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ep.String())
	}
	return out
}
