package engine

import (
	"fmt"
	"net/netip"
	"slices"
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
		groups := m.ServicePortGroups()
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
