package build

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
)

// verdict is an endpoint's expected verdict, written short.
func verdict(addr string, inCluster, inLocal bool, notCluster, notLocal Exclusion) EndpointVerdict {
	return EndpointVerdict{Endpoint: graph.Endpoint{IP: netip.MustParseAddrPort(addr).Addr(), Port: netip.MustParseAddrPort(addr).Port()},
		InCluster: inCluster, InLocal: inLocal, NotCluster: notCluster, NotLocal: notLocal}
}

// Every rule that leaves an endpoint out, and every reason topology is
// used or not, named.
func TestExplainCategorized(t *testing.T) {
	clusterOnly, itpLocal := policyView{}, policyView{itpLocal: true}
	etpLocal := policyView{etpLocal: true, externallyAccessible: true}
	noTopology := func(why TopologyWhy) Topology { return Topology{Mode: TopologyNone, Why: why} }
	for _, tc := range []struct {
		name string
		zone string
		pv   policyView
		eps  []candidate
		want Categorization
	}{{
		name: "not ready, and terminating while ready endpoints exist",
		pv:   clusterOnly,
		eps:  []candidate{cand("10.0.0.1:80", ready), cand("10.0.0.2:80"), cand("10.0.0.3:80", servingTerm)},
		want: Categorization{UsesCluster: true, HasEndpoints: true, Topology: noTopology(NoHints), Endpoints: []EndpointVerdict{
			verdict("10.0.0.1:80", true, false, "", ""),
			verdict("10.0.0.2:80", false, false, ExcludedNotReady, ""),
			verdict("10.0.0.3:80", false, false, ExcludedTerminating, ""),
		}},
	}, {
		name: "no endpoint ready: serving-and-terminating ones are used; not serving, never",
		pv:   clusterOnly,
		eps:  []candidate{cand("10.0.0.1:80", servingTerm), cand("10.0.0.2:80", notServingTerm)},
		want: Categorization{UsesCluster: true, HasEndpoints: true, ClusterFallback: true, Topology: noTopology(NoReadyEndpoints), Endpoints: []EndpointVerdict{
			verdict("10.0.0.1:80", true, false, "", ""),
			verdict("10.0.0.2:80", false, false, ExcludedNotReady, ""),
		}},
	}, {
		name: "zone hints for this zone narrow the Cluster list",
		zone: "zone-a", pv: clusterOnly,
		eps: []candidate{cand("10.0.0.1:80", ready, zones("zone-a")), cand("10.0.0.2:80", ready, zones("zone-b"))},
		want: Categorization{UsesCluster: true, HasEndpoints: true, Topology: Topology{Mode: PreferSameZone, Why: HintsForThisZone}, Endpoints: []EndpointVerdict{
			verdict("10.0.0.1:80", true, false, "", ""),
			verdict("10.0.0.2:80", false, false, ExcludedOtherZoneHints, ""),
		}},
	}, {
		name: "node hints for this node come first",
		zone: "zone-a", pv: clusterOnly,
		eps: []candidate{cand("10.0.0.1:80", ready, zones("zone-a"), nodes("node-1")), cand("10.0.0.2:80", ready, zones("zone-a"), nodes("node-2"))},
		want: Categorization{UsesCluster: true, HasEndpoints: true, Topology: Topology{Mode: PreferSameNode, Why: HintsForThisNode}, Endpoints: []EndpointVerdict{
			verdict("10.0.0.1:80", true, false, "", ""),
			verdict("10.0.0.2:80", false, false, ExcludedOtherNodeHints, ""),
		}},
	}, {
		name: "hints for other zones only: ignored",
		zone: "zone-c", pv: clusterOnly,
		eps: []candidate{cand("10.0.0.1:80", ready, zones("zone-a")), cand("10.0.0.2:80", ready, zones("zone-b"))},
		want: Categorization{UsesCluster: true, HasEndpoints: true, Topology: noTopology(NoHintForThisNode), Endpoints: []EndpointVerdict{
			verdict("10.0.0.1:80", true, false, "", ""), verdict("10.0.0.2:80", true, false, "", ""),
		}},
	}, {
		name: "a ready endpoint without hints: ignored",
		zone: "zone-a", pv: clusterOnly,
		eps: []candidate{cand("10.0.0.1:80", ready, zones("zone-a")), cand("10.0.0.2:80", ready)},
		want: Categorization{UsesCluster: true, HasEndpoints: true, Topology: noTopology(IncompleteHints), Endpoints: []EndpointVerdict{
			verdict("10.0.0.1:80", true, false, "", ""), verdict("10.0.0.2:80", true, false, "", ""),
		}},
	}, {
		name: "internal traffic policy Local: this node's ready endpoints; no Cluster list",
		pv:   itpLocal,
		eps: []candidate{cand("10.0.0.1:80", ready, local), cand("10.0.0.2:80", ready),
			cand("10.0.0.3:80", servingTerm, local), cand("10.0.0.4:80", local)},
		want: Categorization{UsesLocal: true, HasEndpoints: true, Topology: noTopology(ClusterNotUsed), Endpoints: []EndpointVerdict{
			verdict("10.0.0.1:80", false, true, "", ""),
			verdict("10.0.0.2:80", false, false, "", ExcludedOnAnotherNode),
			verdict("10.0.0.3:80", false, false, "", ExcludedTerminating),
			verdict("10.0.0.4:80", false, false, "", ExcludedNotReady),
		}},
	}, {
		name: "external traffic policy Local: both lists, topology narrows only Cluster",
		zone: "zone-a", pv: etpLocal,
		eps: []candidate{cand("10.0.0.1:80", ready, local, zones("zone-b")), cand("10.0.0.2:80", ready, zones("zone-a"))},
		want: Categorization{UsesCluster: true, UsesLocal: true, HasEndpoints: true, Topology: Topology{Mode: PreferSameZone, Why: HintsForThisZone}, Endpoints: []EndpointVerdict{
			verdict("10.0.0.1:80", false, true, ExcludedOtherZoneHints, ""),
			verdict("10.0.0.2:80", true, false, "", ExcludedOnAnotherNode),
		}},
	}, {
		name: "no endpoints at all",
		pv:   etpLocal,
		want: Categorization{UsesCluster: true, UsesLocal: true, Topology: noTopology(NoReadyEndpoints)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, explainCategorized(tc.eps, tc.pv, "node-1", tc.zone), cmpopts.EquateComparable(netip.Addr{}, graph.Place{}), cmpopts.IgnoreFields(graph.Endpoint{}, "Ready", "Serving", "Terminating", "Local")); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// Over random endpoints and policies, each exclusion holds of the
// endpoint it is given for, and an endpoint has one exactly when a list
// the port uses does not hold it.
func TestExplanationsHoldOfTheirEndpoints(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) []string {
		var out []string
		for _, x := range xs {
			if r.IntN(2) == 0 {
				out = append(out, x)
			}
		}
		return out
	}
	for range 5000 {
		var eps []candidate
		for i := range r.IntN(6) {
			c := cand(netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i + 1)}), 80).String())
			c.ep.Ready, c.ep.Serving, c.ep.Terminating, c.ep.Local = r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0
			c.ep.Serving = c.ep.Serving || c.ep.Ready
			if r.IntN(3) > 0 {
				c.hints = &object.Hints{ForZones: pick("zone-a", "zone-b"), ForNodes: pick("node-1", "node-2")}
			}
			eps = append(eps, c)
		}
		pv := policyView{itpLocal: r.IntN(2) == 0, etpLocal: r.IntN(2) == 0, externallyAccessible: r.IntN(2) == 0}
		x := explainCategorized(eps, pv, "node-1", "zone-a")
		for i, v := range x.Endpoints {
			c := &eps[i]
			check := func(list string, uses, in bool, why Exclusion) {
				if !uses && (in || why != "") || uses && in == (why != "") {
					t.Fatalf("%s list (used %v): in %v, excluded %q: %+v", list, uses, in, why, x)
				}
				st := c.ep.Serving && c.ep.Terminating
				ok := map[Exclusion]bool{
					"":                     true,
					ExcludedNotReady:       !c.ep.Ready && !st,
					ExcludedTerminating:    !c.ep.Ready && st,
					ExcludedOtherNodeHints: c.ep.Ready && x.Topology.Mode == PreferSameNode && !c.hintedForNode("node-1"),
					ExcludedOtherZoneHints: c.ep.Ready && x.Topology.Mode == PreferSameZone && !c.hintedForZone("zone-a"),
					ExcludedOnAnotherNode:  list == "local" && !c.ep.Local,
				}[why]
				if !ok {
					t.Fatalf("%s: %v excluded as %q: %+v (topology %+v)", list, c.ep.AddrPort(), why, c.ep, x.Topology)
				}
			}
			check("cluster", x.UsesCluster, v.InCluster, v.NotCluster)
			check("local", x.UsesLocal, v.InLocal, v.NotLocal)
		}
	}
}

// Explain agrees with ServicePorts in every situation the builder's
// tests check: each port's internal and external lists are the endpoints
// Explain puts in the list each kind of frontend uses, in order.
func TestExplainAgreesWithTheGraph(t *testing.T) {
	var conv object.Converter
	for _, tc := range endpointSetCases {
		t.Run(tc.name, func(t *testing.T) {
			var sl []*object.EndpointSlice
			for _, s := range tc.slices {
				sl = append(sl, conv.EndpointSlice(s))
			}
			svc := conv.Service(tc.svc)
			built := ServicePorts(svc, sl, n1, Options{})
			x := Explain(svc, sl, n1, Options{})
			if len(x.Ports) != len(built.Ports) || x.Skipped != built.Skipped {
				t.Fatalf("explained %d ports (skipped %q), built %d (skipped %q)", len(x.Ports), x.Skipped, len(built.Ports), built.Skipped)
			}
			byName := map[graph.ServicePortName]PortExplanation{}
			for _, p := range x.Ports {
				byName[p.Name] = p
			}
			for _, sp := range built.Ports {
				p, ok := byName[sp.Name]
				if !ok {
					t.Fatalf("%s not explained", sp.Name)
				}
				var internal, external []string
				for _, f := range p.Families {
					internal = append(internal, inList(f, f.Internal)...)
					external = append(external, inList(f, f.External)...)
				}
				if got, want := strings.Join(external, " "), endpointsText(sp.ExternalEndpoints); got != want {
					t.Errorf("%s external: explained %q, built %q", sp.Name, got, want)
				}
				if got, want := strings.Join(internal, " "), endpointsText(sp.InternalEndpoints); got != want {
					t.Errorf("%s internal: explained %q, built %q", sp.Name, got, want)
				}
			}
		})
	}
}

// inList lists the endpoints of a family in the list named ("": none).
func inList(f FamilyExplanation, list string) []string {
	var out []string
	for _, v := range f.Endpoints {
		if list == ListCluster && v.InCluster || list == ListLocal && v.InLocal {
			out = append(out, v.Endpoint.AddrPort().String())
		}
	}
	return out
}

func endpointsText(l graph.EndpointList) string {
	var out []string
	for e := range l.All() {
		out = append(out, e.AddrPort().String())
	}
	return strings.Join(out, " ")
}
