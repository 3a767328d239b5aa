package hnstrace

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

func snapshot(t *testing.T) graph.Snapshot {
	t.Helper()
	tr := tracker.New(tracker.Options{NodeName: "node-1", Peers: true, Build: build.Options{Annotations: (&hns.Factory{}).Annotations()}})
	tr.UpsertNode(WithPodCIDRs(Node("node-1", "zone-a", "192.168.0.10"), "10.244.1.0/24"))
	tr.UpsertNode(WithPodCIDRs(Node("node-2", "zone-a", "192.168.0.11"), "10.244.2.0/24"))
	tcp, v4 := v1.ProtocolTCP, discovery.AddressTypeIPv4
	tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080),
		Endpoint("10.244.1.5", OnNode("node-1")), Endpoint("10.244.2.5", OnNode("node-2")), Endpoint("10.244.1.6", OnNode("node-1"), NotReady))))
	tr.UpsertService(object.ServiceOf(Service("ns", "np", ClusterIPs("10.96.0.11"), Type(v1.ServiceTypeNodePort), ETPLocal, Port("http", tcp, 80, 30080))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "np-1", "np", v4, SlicePort("http", tcp, 8080),
		Endpoint("10.244.1.7", OnNode("node-1")), Endpoint("10.244.2.7", OnNode("node-2")))))
	tr.UpsertService(object.ServiceOf(Service("ns", "empty", ClusterIPs("10.96.0.12"), Port("http", tcp, 80, 0))))
	return tr.Snapshot()
}

// The simulated HNS sends the connections only where the core's graph
// says, spread over every endpoint the connection may use.
func TestTraceFollowsTheGraph(t *testing.T) {
	s := snapshot(t)
	a := netip.MustParseAddr
	for _, tc := range []struct {
		name string
		c    graph.Connection
	}{
		{"a pod to the ClusterIP", graph.Connection{Src: a("10.244.1.9"), Dst: a("10.96.0.10"), Port: 80, Protocol: graph.TCP, FromThisNode: true}},
		{"outside to an ETP Local NodePort", graph.Connection{Src: a("198.51.100.5"), Dst: a("192.168.0.10"), Port: 30080, Protocol: graph.TCP}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			routes := s.Routes(tc.c)
			if len(routes) != 1 {
				t.Fatalf("%d routes", len(routes))
			}
			var want []string
			for _, e := range routes[0].Endpoints {
				want = append(want, e.String())
			}
			slices.Sort(want)
			r, err := Trace(context.Background(), s, hnssim.Windows2025, tc.c, 64, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, r.Backends()); d != "" || len(r.Backends()) == 0 {
				t.Errorf("backends reached (-graph +HNS):\n%s (verdicts %v)", d, r.Verdicts)
			}
		})
	}
}

// HNS cannot reject: a frontend without endpoints has no load balancer,
// and its packets go nowhere (a gap the driver declares).
func TestNoEndpointsIsNoLoadBalancer(t *testing.T) {
	s := snapshot(t)
	c := graph.Connection{Src: netip.MustParseAddr("10.244.1.9"), Dst: netip.MustParseAddr("10.96.0.12"), Port: 80, Protocol: graph.TCP, FromThisNode: true}
	r, err := Trace(context.Background(), s, hnssim.Windows2025, c, 4, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Backends()) != 0 || len(r.Verdicts) != 1 {
		t.Fatalf("verdicts %v: want no backend, one outcome", r.Verdicts)
	}
	for k := range r.Verdicts {
		if !strings.HasPrefix(k, "routed") && !strings.HasPrefix(k, "nowhere") {
			t.Fatalf("verdict %q", k)
		}
	}
}
