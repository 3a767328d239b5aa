package engine

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// Every endpoint of a service port is one bucket of one of its groups,
// whether the list is one group or a tree of them (whose inner buckets
// name no endpoint).
func TestServicePortGroupsNameEveryEndpoint(t *testing.T) {
	for _, n := range []int{3, 1000} {
		m := testModel(t)
		var eps []graph.Endpoint
		var want []netip.AddrPort
		for i := range n {
			e := graph.Endpoint{IP: netip.MustParseAddr(fmt.Sprintf("10.244.%d.%d", i/250, i%250+1)), Port: 8080, Ready: true, Serving: true}
			eps = append(eps, e)
			want = append(want, e.AddrPort())
		}
		name := graph.ServicePortName{Namespace: "ns", Name: "web", Port: "http", Protocol: graph.TCP}
		m.setServicePort(&graph.ServicePort{Name: name, ClusterIPs: []netip.Addr{netip.MustParseAddr("10.96.0.10")}, Port: 80,
			InternalEndpoints: graph.EndpointListOf(eps...)})
		var got []netip.AddrPort
		groups := m.CountingOf(m.ServicePortNames()).Groups
		inner := 0
		for _, g := range groups {
			if g.ServicePort != name {
				t.Fatalf("a group of %v", g.ServicePort)
			}
			for _, ep := range g.Endpoints {
				if ep.IsValid() {
					got = append(got, ep)
				} else {
					inner++
				}
			}
		}
		slices.SortFunc(got, netip.AddrPort.Compare)
		slices.SortFunc(want, netip.AddrPort.Compare)
		if !slices.Equal(got, want) {
			t.Errorf("%d endpoints: the groups' buckets name %d endpoints", n, len(got))
		}
		if (n > 256) != (inner > 0) || (n > 256) != (len(groups) > 1) {
			t.Errorf("%d endpoints: %d groups, %d inner buckets", n, len(groups), inner)
		}
	}
}

// The counted flows: a LoadBalancer IP's source-range drop and an
// ETP=Local NodePort's drop (no local endpoint) are the service port's
// drops; with ClientIP affinity, each endpoint's DNAT flow counts for it,
// unless another affinity service port shares the flow.
func TestServicePortCountedFlows(t *testing.T) {
	m := testModel(t)
	ep := func(ip string) graph.Endpoint {
		return graph.Endpoint{IP: netip.MustParseAddr(ip), Port: 8080, Ready: true, Serving: true}
	}
	name := func(n string) graph.ServicePortName {
		return graph.ServicePortName{Namespace: "ns", Name: n, Port: "http", Protocol: graph.TCP}
	}
	v4 := graph.FamilySet(0).With(graph.IPv4)
	m.setServicePort(&graph.ServicePort{Name: name("lb"), ClusterIPs: []netip.Addr{netip.MustParseAddr("10.96.0.80")}, Port: 80,
		NodePort: 30080, ExternalTrafficPolicy: graph.PolicyLocal, UsableFamilies: v4,
		LoadBalancerIPs: []netip.Addr{netip.MustParseAddr("203.0.113.80")}, LoadBalancerSourceRanges: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")},
		InternalEndpoints: graph.EndpointListOf(ep("10.244.2.5")), ShortCircuitEndpoints: graph.EndpointListOf(ep("10.244.2.5"))})
	sticky := func(n string, eps ...graph.Endpoint) {
		m.setServicePort(&graph.ServicePort{Name: name(n), ClusterIPs: []netip.Addr{netip.MustParseAddr("10.96.1." + fmt.Sprint(len(n)))}, Port: 80,
			SessionAffinity: graph.SessionAffinity{ClientIP: true, TimeoutSeconds: 10800}, UsableFamilies: v4, InternalEndpoints: graph.EndpointListOf(eps...)})
	}
	sticky("one", ep("10.244.1.5"), ep("10.244.1.6"))
	sticky("twin", ep("10.244.1.6"), ep("10.244.1.7"))
	var got []string
	for _, f := range m.CountingOf(m.ServicePortNames()).Flows {
		got = append(got, fmt.Sprintf("%s %v", f.ServicePort.Name, f.Endpoint))
	}
	slices.Sort(got)
	want := []string{
		"lb invalid AddrPort", // the source-range drop
		"lb invalid AddrPort", // the NodePort without a local endpoint (testConfig: on the NodePort address only)
		"lb invalid AddrPort", // the LB IP without a local endpoint, from an allowed source
		"one 10.244.1.5:8080",
		"twin 10.244.1.7:8080",
	}
	if !slices.Equal(got, want) {
		t.Errorf("counted flows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
