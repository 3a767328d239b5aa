//go:build linux

package ovs

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// Through a Service of 303 endpoints (a tree of select groups; 300 of its
// addresses exist only in its groups): each traced source port names one
// endpoint, the real connection from that port reaches it (a real pod
// answers; an address no pod has does not), and the counters read back
// exactly the traced endpoints, one connection each.
func TestOVSTraceThroughAGroupTree(t *testing.T) {
	w := newWorld(t)
	opts := []SliceOption{SlicePort("http", tcp, 8080), onNode1(p1IP4.String()), onNode1(p2IP4.String()), onNode2(remote.String())}
	for i := range 150 {
		opts = append(opts, onNode1(fmt.Sprintf("10.244.1.%d", i+14)), onNode2(fmt.Sprintf("10.244.2.%d", i+14)))
	}
	w.tr.UpsertService(object.ServiceOf(Service("ns", "big", ClusterIPs("10.96.0.90"), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "big-1", "big", v4, opts...)))
	w.sync()
	owner := map[string]string{p1IP4.String() + ":8080": "p1", p2IP4.String() + ":8080": "p2", remote.String() + ":8080": "r1"}
	c := graph.Connection{Src: cIP4, Dst: netip.MustParseAddr("10.96.0.90"), Port: 80, Protocol: graph.TCP, FromThisNode: true}
	const n = 24
	walks, _, err := w.d.traceWalks(t.Context(), c, n)
	if err != nil {
		t.Fatal(err)
	}
	traced := map[netip.AddrPort]uint64{}
	for k, walk := range walks {
		if !walk.Endpoint.IsValid() {
			t.Fatalf("source port %d: the trace reached no endpoint (%v)", traceFirstPort+k, walk.Verdict)
		}
		traced[walk.Endpoint]++
		id, _, err := ovstest.ProbeTCPFromPort(w.client.NS, netip.Addr{}, uint16(traceFirstPort+k), netip.AddrPortFrom(c.Dst, c.Port), 300*time.Millisecond)
		want := owner[walk.Endpoint.String()]
		if (want == "" && !errors.Is(err, ovstest.ErrTimeout)) || (want != "" && id != want) {
			t.Errorf("source port %d: traced to %s (%q), the connection reached %q (%v)", traceFirstPort+k, walk.Endpoint, want, id, err)
		}
	}
	if len(traced) < 2 {
		t.Errorf("%d connections traced to %v: want several endpoints", n, traced)
	}
	big := graph.ServicePortName{Namespace: "ns", Name: "big", Port: "http", Protocol: graph.TCP}
	var got map[netip.AddrPort]uint64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		counts, err := w.d.Counters(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got = maps.Clone(counts[big].Endpoints)
		maps.DeleteFunc(got, func(_ netip.AddrPort, n uint64) bool { return n == 0 })
		if maps.Equal(got, traced) {
			break
		}
	}
	if d := cmp.Diff(traced, got); d != "" {
		t.Errorf("counted (-traced +counted):\n%s", d)
	}
}
