package pipeline

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// A service port costs flows per frontend: with 1, 10 or 100 endpoints it
// has the same flows (the endpoints live in its groups' buckets), and only
// ClientIP affinity adds a DNAT flow per endpoint.
func TestFlowsDoNotGrowWithEndpoints(t *testing.T) {
	cfg := &Config{NodeIPs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}, NodePortIPs: []netip.Addr{netip.MustParseAddr("169.254.0.1")}, CtZone: 65000}
	portOf := func(n int, affinity bool, etpLocal bool) *graph.ServicePort {
		var eps []graph.Endpoint
		for i := range n {
			eps = append(eps, graph.Endpoint{IP: netip.MustParseAddr(fmt.Sprintf("10.244.%d.%d", i/200, i%200+2)), Port: 8080, Ready: true, Serving: true, Local: i%2 == 0})
		}
		list := graph.EndpointListOf(eps...)
		sp := &graph.ServicePort{
			Name:              graph.ServicePortName{Namespace: "ns", Name: "web", Port: "http", Protocol: graph.TCP},
			ClusterIPs:        []netip.Addr{netip.MustParseAddr("10.96.0.10")},
			Port:              80,
			NodePort:          30080,
			LoadBalancerIPs:   []netip.Addr{netip.MustParseAddr("203.0.113.7")},
			InternalEndpoints: list, ExternalEndpoints: list, ShortCircuitEndpoints: list,
			UsableFamilies: graph.FamilySet(0).With(graph.IPv4),
		}
		if etpLocal {
			sp.ExternalTrafficPolicy = graph.PolicyLocal
		}
		sp.SessionAffinity.ClientIP, sp.SessionAffinity.TimeoutSeconds = affinity, 10800
		return sp
	}
	ids := func(slot string) uint32 { return uint32(len(slot)) }
	for _, tc := range []struct {
		name     string
		affinity bool
		etpLocal bool
	}{{"cluster", false, false}, {"etp-local", false, true}, {"affinity", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			var flows []int
			for _, n := range []int{1, 10, 100} {
				res := ServiceFlows(cfg, portOf(n, tc.affinity, tc.etpLocal), ids, nil)
				flows = append(flows, len(res.Flows))
				buckets := 0
				for _, g := range res.Groups {
					buckets += g.Buckets.Len()
				}
				if buckets < n {
					t.Fatalf("%d endpoints: %d buckets in all", n, buckets)
				}
				switch {
				case !tc.affinity && len(res.Endpoints) != 0:
					t.Fatalf("%d endpoints without affinity: %d DNAT flows, want none", n, len(res.Endpoints))
				case tc.affinity && len(res.Endpoints) != n:
					t.Fatalf("%d endpoints with affinity: %d DNAT flows, want one each", n, len(res.Endpoints))
				}
			}
			if flows[0] != flows[1] || flows[1] != flows[2] {
				t.Fatalf("service flows with 1, 10, 100 endpoints: %v, want equal", flows)
			}
		})
	}
}

// TestSlotNamesAreStable: a slot's name is part of its group's ID, which
// must stay the same across versions (a restarted driver adopts groups by
// ID).
func TestSlotNamesAreStable(t *testing.T) {
	for _, fam := range []graph.IPFamily{graph.IPv4, graph.IPv6} {
		for _, kind := range []string{"internal", "external", "short-circuit"} {
			if got, want := slotName(fam, kind), fam.String()+"/"+kind; got != want {
				t.Errorf("slotName(%v, %s) = %q, want %q", fam, kind, got, want)
			}
		}
	}
}
