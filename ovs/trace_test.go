//go:build linux

package ovs

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	v1 "k8s.io/api/core/v1"
)

// explain's trace through the live bridge (TraceLive) says, for each
// source port, the endpoint a real connection from that port reaches: from
// a pod to a ClusterIP and from the node to its own NodePort (DNATed by
// the host first, SNATed towards a remote endpoint); a reject, a drop;
// UDP is refused, saying why.
func TestOVSTraceMatchesTraffic(t *testing.T) {
	w := newWorld(t)
	tr := w.tr
	tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Type(v1.ServiceTypeNodePort), Port("http", tcp, 80, 30080))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080),
		onNode1(p1IP4.String()), onNode1(p2IP4.String()), onNode2(remote.String()))))
	tr.UpsertService(object.ServiceOf(Service("ns", "empty", ClusterIPs("10.96.0.30"), Port("http", tcp, 80, 0))))
	tr.UpsertService(object.ServiceOf(Service("ns", "loc", ClusterIPs("10.96.0.31"), ITPLocal, Port("http", tcp, 80, 0))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "loc-1", "loc", v4, SlicePort("http", tcp, 8080), onNode2(remote.String()))))
	w.sync()
	owner := map[string]string{p1IP4.String() + ":8080": "p1", p2IP4.String() + ":8080": "p2", remote.String() + ":8080": "r1"}
	nodeIP := netip.MustParseAddr("192.168.100.10")
	const n = 12
	for _, tc := range []struct {
		name string
		ns   string
		c    graph.Connection
	}{
		{"a pod to a ClusterIP", w.client.NS, graph.Connection{Src: cIP4, Dst: netip.MustParseAddr("10.96.0.10"), Port: 80, Protocol: graph.TCP, FromThisNode: true}},
		{"the node to its NodePort", w.n.NS, graph.Connection{Src: nodeIP, Dst: nodeIP, Port: 30080, Protocol: graph.TCP, FromThisNode: true}},
	} {
		trace, err := w.d.TraceLive(t.Context(), tc.c, n)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(trace.Backends) < 2 || len(trace.Path) == 0 {
			t.Errorf("%s: %d connections traced to %v (path %v); want several endpoints and a path", tc.name, n, trace.Reached, trace.Path)
		}
		// Each source port again, as a real connection from that port.
		walks, _, err := w.d.traceWalks(t.Context(), tc.c, n)
		if err != nil {
			t.Fatal(err)
		}
		for k, walk := range walks {
			want := walk.Endpoint.String()
			id, _, err := ovstest.ProbeTCPFromPort(tc.ns, netip.Addr{}, uint16(traceFirstPort+k), netip.AddrPortFrom(tc.c.Dst, tc.c.Port), probeTimeout)
			if err != nil || id != owner[want] {
				t.Errorf("%s, source port %d: traced to %s (%s), the connection reached %q (%v)", tc.name, traceFirstPort+k, want, owner[want], id, err)
			}
		}
	}
	for _, tc := range []struct {
		dst, want string
	}{{"10.96.0.30", "rejected"}, {"10.96.0.31", "dropped"}} {
		trace, err := w.d.TraceLive(t.Context(), graph.Connection{Src: cIP4, Dst: netip.MustParseAddr(tc.dst), Port: 80, Protocol: graph.TCP, FromThisNode: true}, 3)
		if err != nil || trace.Reached[tc.want] != 3 || len(trace.Backends) != 0 {
			t.Errorf("%s: %v, %v; want %s x3", tc.dst, trace.Reached, err, tc.want)
		}
	}
	_, err := w.d.TraceLive(t.Context(), graph.Connection{Src: cIP4, Dst: netip.MustParseAddr("10.96.0.10"), Port: 53, Protocol: graph.UDP}, 1)
	if err == nil || !strings.Contains(err.Error(), "UDP") {
		t.Errorf("a UDP trace: %v; want it refused, saying why", err)
	}
}
