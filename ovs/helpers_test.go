package ovs

import (
	"context"
	"net/netip"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/source/file"
	"github.com/switchyard-proxy/switchyard/core/tracker"
)

// exampleSnapshot is examples/cluster.yaml seen from node-1, plus an
// SCTP dual-stack service with affinity (the example has none).
func exampleSnapshot(t *testing.T) graph.Snapshot {
	t.Helper()
	tr := tracker.New(tracker.Options{NodeName: "node-1", Peers: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := (&file.Source{Path: "../examples/cluster.yaml"}).Start(ctx, tr); err != nil {
		t.Fatal(err)
	}
	s := tr.Snapshot()
	ep := func(ip string, port uint16, local bool) graph.Endpoint {
		return graph.Endpoint{IP: netip.MustParseAddr(ip), Port: port, Local: local, Ready: true, Serving: true}
	}
	s.ServicePorts = append(s.ServicePorts, &graph.ServicePort{
		Name:                  graph.ServicePortName{Namespace: "x", Name: "sctp", Port: "s", Protocol: graph.SCTP},
		ClusterIPs:            []netip.Addr{netip.MustParseAddr("10.96.50.1"), netip.MustParseAddr("fd00:96::50:1")},
		Port:                  9999,
		SessionAffinity:       graph.SessionAffinity{ClientIP: true, TimeoutSeconds: 86400},
		InternalTrafficPolicy: graph.PolicyCluster, ExternalTrafficPolicy: graph.PolicyCluster,
		InternalEndpoints: []graph.Endpoint{ep("10.244.1.90", 9999, true), ep("fd00:244:1::90", 9999, true)},
		UsableFamilies:    graph.FamilySet(0).With(graph.IPv4).With(graph.IPv6),
	})
	return s
}

func testOptions() Options {
	var o Options
	fs := newFlagSet()
	o.AddFlags(fs)
	return o
}
