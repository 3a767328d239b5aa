package engine

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/core/graph"
)

// The host routes a frontend into the bridge unless it is another node's
// address; a peer's addresses follow it as it changes and leaves, also
// when two peers share one.
func TestRoutesFrontendFollowsThePeers(t *testing.T) {
	ip := netip.MustParseAddr
	peer := func(name string, ips ...string) graph.Node {
		n := graph.Node{Name: name}
		for _, s := range ips {
			n.IPs = append(n.IPs, ip(s))
		}
		return n
	}
	asked := []string{"10.96.0.10", "192.168.1.2", "192.168.1.3", "192.168.1.4"}
	for _, tc := range []struct {
		name   string
		deltas []graph.Delta
		want   []string // the addresses routed
	}{
		{name: "no peers", want: asked},
		{name: "two peers", deltas: []graph.Delta{{Peers: []graph.Node{peer("a", "192.168.1.2"), peer("b", "192.168.1.3")}}},
			want: []string{"10.96.0.10", "192.168.1.4"}},
		{name: "a peer's address changes", deltas: []graph.Delta{{Peers: []graph.Node{peer("a", "192.168.1.2")}}, {Peers: []graph.Node{peer("a", "192.168.1.4")}}},
			want: []string{"10.96.0.10", "192.168.1.2", "192.168.1.3"}},
		{name: "a peer leaves", deltas: []graph.Delta{{Peers: []graph.Node{peer("a", "192.168.1.2"), peer("b", "192.168.1.3")}}, {RemovedPeers: []string{"a"}}},
			want: []string{"10.96.0.10", "192.168.1.2", "192.168.1.4"}},
		{name: "two peers share an address, one leaves", deltas: []graph.Delta{{Peers: []graph.Node{peer("a", "192.168.1.2"), peer("b", "192.168.1.2")}}, {RemovedPeers: []string{"b"}}},
			want: []string{"10.96.0.10", "192.168.1.3", "192.168.1.4"}},
		{name: "every peer leaves", deltas: []graph.Delta{{Peers: []graph.Node{peer("a", "192.168.1.2"), peer("b", "192.168.1.2")}}, {RemovedPeers: []string{"a", "b"}}},
			want: asked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := testModel(t)
			for _, d := range tc.deltas {
				m.Apply(d)
			}
			var got []string
			for _, a := range asked {
				if m.RoutesFrontend(ip(a)) {
					got = append(got, a)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("routed (-want +got):\n%s", diff)
			}
		})
	}
}
