package hns_test

import (
	"slices"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

// endpointByIP finds the simulator's endpoint with an IP (nil if none).
func (w *world) endpointByIP(ip string) *hns.Endpoint {
	w.t.Helper()
	eps, err := w.sim.Endpoints(w.networkID())
	if err != nil {
		w.t.Fatal(err)
	}
	for _, ep := range eps {
		if ep.IP() == ip {
			return &ep
		}
	}
	return nil
}

// Upstream winkernel (syncProxyRules) on overlay: the SourceVIP is the
// configured one unless a backend on another node is a node's own
// address or outside every remote subnet; then the node IP.
func TestOverlaySourceVIPFollowsUpstream(t *testing.T) {
	for _, tc := range []struct {
		name      string
		eps       []SliceOption
		sourceVIP string
	}{
		{"pods only, here and on another node: --hns-source-vip", []SliceOption{local("10.244.1.5"), remote("10.244.2.7")}, "10.244.1.254"},
		{"a backend that is another node's address: the node IP", []SliceOption{local("10.244.1.5"), remote(node2.String())}, nodeIP.String()},
		{"a backend outside every pod subnet: the node IP", []SliceOption{remote("198.51.100.7")}, nodeIP.String()},
		{"this node's own pods only: --hns-source-vip", []SliceOption{local("10.244.1.5")}, "10.244.1.254"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, hnssim.Windows2022, "Overlay")
			w.tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0))))
			w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, append([]SliceOption{SlicePort("http", tcp, 8080)}, tc.eps...)...)))
			w.mustSync()
			lb, ok := w.lbs()["10.96.0.10:80/tcp"]
			if !ok || lb.SourceVIP != tc.sourceVIP {
				t.Fatalf("SourceVIP %q, want %q (load balancers %v)", lb.SourceVIP, tc.sourceVIP, keys(w.lbs()))
			}
		})
	}
}

func TestOverlayVIPAndSourceVIPEndpoints(t *testing.T) {
	w := newWorld(t, hnssim.Windows2022, "Overlay")
	// A Service without endpoints still gets its ClusterIP's endpoint
	// (upstream makes it before looking at the backends).
	w.tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0), Port("dns", udp, 53, 0))))
	w.mustSync()
	ep := w.endpointByIP("10.96.0.10")
	if ep == nil || ep.Flags != hns.EndpointFlagRemote || ep.MacAddress != "00:15:5d:00:00:01" || ep.ProviderAddress() != nodeIP.String() {
		t.Fatalf("the ClusterIP's endpoint %+v: want remote, the host's MAC, this node's IP as provider address", ep)
	}
	src := w.endpointByIP("10.244.1.254")
	if src == nil || src.Flags != 0 || src.MacAddress != "00:15:5d:00:00:01" || src.ProviderAddress() != "" {
		t.Fatalf("the source VIP's endpoint %+v: want local, the host's MAC, no provider address", src)
	}
	// A restart makes neither again.
	w.start()
	w.sim.ResetCalls()
	w.mustSync()
	if c := lbCalls(w.sim.Calls()); len(c) != 0 {
		t.Fatalf("a restart made calls %v", c)
	}
	// Two ports share the ClusterIP's endpoint: it goes with the Service.
	w.tr.DeleteService("ns", "web")
	w.mustApply()
	if ep := w.endpointByIP("10.96.0.10"); ep != nil {
		t.Fatalf("the ClusterIP's endpoint outlived its Service: %+v", ep)
	}
	if w.endpointByIP("10.244.1.254") == nil {
		t.Fatal("the source VIP's endpoint was deleted")
	}
	// `switchyard cleanup` takes the ClusterIP endpoints, not the source
	// VIP's (upstream never deletes it).
	w.tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0))))
	w.mustApply()
	if err := w.d.Cleanup(t.Context()); err != nil {
		t.Fatal(err)
	}
	if w.endpointByIP("10.96.0.10") != nil || w.endpointByIP("10.244.1.254") == nil {
		t.Fatal("cleanup: want the ClusterIP's endpoint gone and the source VIP's kept")
	}
}

func TestOverlayVIPEndpointFailureHoldsTheClusterIPLoadBalancer(t *testing.T) {
	w := newWorld(t, hnssim.Windows2022, "Overlay")
	w.sim.AddLocalEndpoint("cbr0", "source-vip", "10.244.1.254") // made by the CNI's set-up
	w.sim.FailNext("CreateEndpoint", hnssim.ErrUnavailable, 1)
	w.tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"))))
	if err := w.sync(); err == nil {
		t.Fatal("a sync whose ClusterIP endpoint failed said nothing")
	}
	if _, ok := w.lbs()["10.96.0.10:80/tcp"]; ok {
		t.Fatal("a ClusterIP load balancer was made without its ClusterIP's endpoint (upstream skips the service port)")
	}
	w.mustSync()
	if _, ok := w.lbs()["10.96.0.10:80/tcp"]; !ok || w.endpointByIP("10.96.0.10") == nil {
		t.Fatal("the retry did not make the endpoint and the load balancer")
	}
}

// A backend on a node whose route the CNI had not written yet gets this
// node's IP as provider address (as upstream); when the route appears,
// the next change round replaces the endpoint (upstream keeps it).
func TestStaleProviderAddressIsRepaired(t *testing.T) {
	w := newWorld(t, hnssim.Windows2022, "Overlay")
	w.tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), Endpoint("10.244.3.7", OnNode("node-3")))))
	w.mustSync()
	if pa := w.endpointByIP("10.244.3.7").ProviderAddress(); pa != nodeIP.String() {
		t.Fatalf("provider address %q before node-3's route, want this node's %s", pa, nodeIP)
	}
	node3 := "192.168.0.13"
	w.sim.SetRemoteSubnets("cbr0", hns.RemoteSubnet{DestinationPrefix: "10.244.2.0/24", ProviderAddress: node2.String()},
		hns.RemoteSubnet{DestinationPrefix: "10.244.3.0/24", ProviderAddress: node3})
	// Any change round re-reads the network (one call).
	w.sim.ResetCalls()
	w.tr.UpsertService(object.ServiceOf(Service("ns", "other", ClusterIPs("10.96.0.11"), Port("http", tcp, 80, 0))))
	w.mustApply()
	if n := w.sim.Calls()["Network"]; n != 1 {
		t.Fatalf("%d network reads in a change round, want 1", n)
	}
	if pa := w.endpointByIP("10.244.3.7").ProviderAddress(); pa != node3 {
		t.Fatalf("provider address %q after node-3's route appeared, want %s", pa, node3)
	}
	if b := w.backends(w.lbs()["10.96.0.10:80/tcp"]); !slices.Equal(b, []string{"10.244.3.7"}) {
		t.Fatalf("backends after the repair %v", b)
	}
}

func TestOverlayIsSingleStack(t *testing.T) {
	w := newWorld(t, hnssim.Windows2022, "Overlay")
	w.tr.UpsertService(object.ServiceOf(Service("ns", "ds", ClusterIPs("10.96.0.52", "fd00:96::52"), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "ds-4", "ds", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "ds-6", "ds", v6, SlicePort("http", tcp, 8080), local("fd00:244:1::5"))))
	w.mustSync()
	if got := keys(w.lbs()); !slices.Equal(got, []string{"10.96.0.52:80/tcp"}) {
		t.Fatalf("load balancers %v, want the IPv4 one only", got)
	}
	f := &hns.Factory{NewClient: func() (hns.Client, error) { return w.sim, nil }}
	f.Options = w.opts
	w.d.Close() // the factory's driver is the node's switchyard now
	if !f.Capabilities().Has("ipv6") {
		t.Fatal("IPv6 a gap before the factory saw the network")
	}
	if _, err := f.New(t.Context(), dataplanes.Env{}); err != nil {
		t.Fatal(err)
	}
	if f.Capabilities().Has("ipv6") {
		t.Fatal("the factory still declares IPv6 after finding an overlay network")
	}
}
