package hnstrace

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

// The driver's TraceLive judges what the HNS it programmed holds: over a
// simulated HNS standing for the live one, it answers exactly what Trace
// answers from the graph, connection by connection; a load balancer
// deleted behind the driver's back shows in the live answer (the
// connections reach no backend), not in the graph's.
func TestTraceLiveReadsWhatHNSHolds(t *testing.T) {
	s := snapshot(t)
	a := netip.MustParseAddr
	live := SimulatedNode(s, hnssim.Windows2025)
	d, err := Program(context.Background(), live, s, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	toWeb := graph.Connection{Src: a("10.244.1.9"), Dst: a("10.96.0.10"), Port: 80, Protocol: graph.TCP, FromThisNode: true}
	for _, tc := range []struct {
		c        graph.Connection
		backends bool
	}{
		{toWeb, true},
		{graph.Connection{Src: a("198.51.100.5"), Dst: a("192.168.0.10"), Port: 30080, Protocol: graph.TCP}, true},
		{graph.Connection{Src: a("192.168.0.10"), Dst: a("10.96.0.11"), Port: 80, Protocol: graph.TCP, FromThisNode: true}, true},
		{graph.Connection{Src: a("10.244.1.9"), Dst: a("10.96.0.12"), Port: 80, Protocol: graph.TCP, FromThisNode: true}, false},
	} {
		c := tc.c
		want, err := Trace(context.Background(), s, hnssim.Windows2025, c, 64, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if len(want.Backends()) > 0 != tc.backends {
			t.Fatalf("%v: the graph's trace reaches %v", c, want.Verdicts)
		}
		got, err := d.TraceLive(context.Background(), c, 64)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want.Verdicts, got.Reached); d != "" || got.SrcSeen != want.SrcSeen || got.Note != "" {
			t.Errorf("%v: (-graph +live):\n%s source %q, graph's %q; note %q", c, d, got.SrcSeen, want.SrcSeen, got.Note)
		}
	}
	lbs, err := live.LoadBalancers()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(lbs, func(lb hns.LoadBalancer) bool { return slices.Contains(lb.FrontendVIPs, "10.96.0.10") })
	if i < 0 {
		t.Fatal("no load balancer for 10.96.0.10")
	}
	if err := live.DeleteLoadBalancer(lbs[i].ID); err != nil {
		t.Fatal(err)
	}
	got, err := d.TraceLive(context.Background(), toWeb, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Backends) != 0 {
		t.Errorf("after its load balancer was deleted, the live answer reaches %v", got.Reached)
	}
}

// What the simulator cannot take is said, not dropped silently: a load
// balancer naming an endpoint the network does not have.
func TestLiveSaysWhatItCouldNotLoad(t *testing.T) {
	live := hnssim.New(hnssim.Windows2025)
	live.AddNetwork(network, "L2Bridge")
	ep := live.AddLocalEndpoint(network, "pod", "10.244.1.5")
	if _, err := live.CreateLoadBalancer(&hns.LoadBalancer{HostComputeEndpoints: []string{ep.ID}, FrontendVIPs: []string{"10.96.0.10"},
		PortMappings: []hns.PortMapping{{Protocol: 6, InternalPort: 8080, ExternalPort: 80}}, SchemaVersion: hns.V2}); err != nil {
		t.Fatal(err)
	}
	broken := &withoutEndpoints{Sim: live}
	r, err := Live(context.Background(), broken, network, nil, graph.Connection{Src: netip.MustParseAddr("10.244.1.9"), Dst: netip.MustParseAddr("10.96.0.10"), Port: 80, Protocol: graph.TCP, FromThisNode: true}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.NotLoaded) != 1 || r.LoadBalancers != 1 || len(r.Backends()) != 0 {
		t.Errorf("not loaded %q of %d load balancers, backends %v; want the one load balancer said, no backend", r.NotLoaded, r.LoadBalancers, r.Backends())
	}
}

// withoutEndpoints lists a network without its endpoints, as an HNS whose
// endpoint went between two reads would.
type withoutEndpoints struct{ *hnssim.Sim }

func (withoutEndpoints) Endpoints(string) ([]hns.Endpoint, error) { return nil, nil }
