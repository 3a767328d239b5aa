package tracker

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// The tracker explains a Service from the objects it holds, on its node.
func TestTrackerExplainsAService(t *testing.T) {
	tr := New(Options{NodeName: "node-1"})
	tr.UpsertNode(Node("node-1", "zone-a", "192.168.0.10"))
	tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", v1.ProtocolTCP, 80, 0))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", discovery.AddressTypeIPv4, SlicePort("http", v1.ProtocolTCP, 8080),
		Endpoint("10.244.1.5", OnNode("node-1")), Endpoint("10.244.2.5", OnNode("node-2"), NotReady))))
	got, ok := tr.Explain("ns", "web")
	if !ok {
		t.Fatal("ns/web not explained")
	}
	ep := func(ip string, node string, ready bool) graph.Endpoint {
		return graph.Endpoint{IP: netip.MustParseAddr(ip), Port: 8080, Ready: ready, Serving: ready, Local: node == "node-1", Place: graph.PlaceOf(node, "")}
	}
	want := build.ServiceExplanation{Ports: []build.PortExplanation{{
		Name: graph.ServicePortName{Namespace: "ns", Name: "web", Port: "http", Protocol: graph.TCP},
		Families: []build.FamilyExplanation{{Family: graph.IPv4, Internal: build.ListCluster, Categorization: build.Categorization{
			UsesCluster: true, HasEndpoints: true, Topology: build.Topology{Mode: build.TopologyNone, Why: build.NoHints},
			Endpoints: []build.EndpointVerdict{
				{Endpoint: ep("10.244.1.5", "node-1", true), InCluster: true},
				{Endpoint: ep("10.244.2.5", "node-2", false), NotCluster: build.ExcludedNotReady},
			}}}},
	}}}
	if d := cmp.Diff(want, got, cmpopts.EquateComparable(netip.Addr{}, graph.Place{})); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if _, ok := tr.Explain("ns", "other"); ok {
		t.Error("a Service the tracker does not hold was explained")
	}
}
