package engine

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/switchyard-proxy/switchyard/core/graph"
)

// The UDP endpoints a change leaves unreached (their conntrack entries are
// flushed) are those no list of the new port holds: an endpoint moving
// from one list to another, or changing its conditions, stays.
func TestRemovedUDP(t *testing.T) {
	ep := func(last byte, ready bool) graph.Endpoint {
		return graph.Endpoint{IP: netip.AddrFrom4([4]byte{10, 0, 0, last}), Port: 53, Ready: ready, Serving: ready}
	}
	a, b, c, d := ep(1, true), ep(2, true), ep(3, true), ep(4, true)
	port := func(proto graph.Protocol, internal, external []graph.Endpoint) *graph.ServicePort {
		return &graph.ServicePort{Name: graph.ServicePortName{Namespace: "ns", Name: "dns", Protocol: proto},
			InternalEndpoints: graph.EndpointListOf(internal...), ExternalEndpoints: graph.EndpointListOf(external...)}
	}
	old := port(graph.UDP, []graph.Endpoint{a, b, c}, []graph.Endpoint{a, d})
	for _, tc := range []struct {
		name     string
		old, new *graph.ServicePort
		want     []graph.Endpoint
	}{
		{"one gone, one moved, one changed", old, port(graph.UDP, []graph.Endpoint{a, ep(3, false)}, []graph.Endpoint{b}), []graph.Endpoint{d}},
		{"the port removed", old, nil, []graph.Endpoint{a, b, c, d}},
		{"nothing changed", old, port(graph.UDP, []graph.Endpoint{a, b, c}, []graph.Endpoint{a, d}), nil},
		{"TCP", port(graph.TCP, []graph.Endpoint{a}, nil), nil, nil},
	} {
		got := removedUDP(tc.old, tc.new)
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateComparable(netip.Addr{}, graph.Place{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
