//go:build linux

package ovs

import (
	"errors"
	"maps"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	v1 "k8s.io/api/core/v1"
)

// --service-counters' source on a real bridge: N connections through a
// Service are read back as N, each endpoint's count being the answers it
// gave, with or without ClientIP affinity; connections to a Service
// without endpoints count as rejected, packets dropped (ETP=Local without
// a local endpoint, from outside) as dropped. A
// change of the endpoint list (a group modified) starts the Service's
// counts again from zero: OVS 3.1 resets a modified group's statistics,
// as docs/explain.md says.
func TestCountersMatchTraffic(t *testing.T) {
	w := newWorld(t)
	tr := w.tr
	tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080),
		onNode1(p1IP4.String()), onNode1(p2IP4.String()), onNode2(remote.String()))))
	tr.UpsertService(object.ServiceOf(Service("ns", "empty", ClusterIPs("10.96.0.30"), Port("http", tcp, 80, 0))))
	// ClientIP affinity: its buckets choose, its endpoints' DNAT flows count.
	tr.UpsertService(object.ServiceOf(Service("ns", "sticky", ClusterIPs("10.96.0.40"), Port("http", tcp, 80, 0), ClientIPAffinity(600))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "sticky-1", "sticky", v4, SlicePort("http", tcp, 8080),
		onNode1(p1IP4.String()), onNode1(p2IP4.String()))))
	// ETP=Local without a local endpoint: outside traffic is dropped.
	tr.UpsertService(object.ServiceOf(Service("ns", "far", ClusterIPs("10.96.0.81"), Type(v1.ServiceTypeNodePort), ETPLocal, Port("http", tcp, 80, 30082))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "far-1", "far", v4, SlicePort("http", tcp, 8080), onNode2(remote.String()))))
	w.sync()
	name := func(n string) graph.ServicePortName {
		return graph.ServicePortName{Namespace: "ns", Name: n, Port: "http", Protocol: graph.TCP}
	}
	web, empty, sticky, far := name("web"), name("empty"), name("sticky"), name("far")
	const n, refused, dropped = 30, 3, 4
	want := map[graph.ServicePortName]dataplanes.ServicePortCounts{
		web:    answered(n, ap("10.96.0.10", 80), w.client.NS),
		sticky: answered(n, ap("10.96.0.40", 80), w.client.NS),
		empty:  {Endpoints: map[netip.AddrPort]uint64{}, Rejected: refused},
		far:    {Endpoints: map[netip.AddrPort]uint64{}, Dropped: dropped},
	}
	if k := len(want[sticky].Endpoints); k != 1 {
		t.Fatalf("ClientIP affinity: %d endpoints answered one client", k)
	}
	for range refused {
		if _, err := ovstest.ProbeTCP(w.client.NS, netip.Addr{}, ap("10.96.0.30", 80), probeTimeout); !errors.Is(err, ovstest.ErrRefused) {
			t.Fatalf("a connection to a Service without endpoints: %v; want refused", err)
		}
	}
	// Each probe gives up before Linux resends its SYN (1 s): one dropped
	// packet a probe.
	for range dropped {
		if _, err := ovstest.ProbeTCP(w.c.Client, netip.Addr{}, netip.AddrPortFrom(nodeIP, 30082), 500*time.Millisecond); !errors.Is(err, ovstest.ErrTimeout) {
			t.Fatalf("outside traffic to an ETP=Local NodePort without a local endpoint: %v; want dropped", err)
		}
	}
	// OVS adds a datapath flow's packets to the flows and groups it went
	// through when its revalidators next run.
	var got map[graph.ServicePortName]dataplanes.ServicePortCounts
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		counts, err := w.d.Counters(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got = map[graph.ServicePortName]dataplanes.ServicePortCounts{}
		for sp := range want {
			c := counts[sp]
			maps.DeleteFunc(c.Endpoints, func(_ netip.AddrPort, n uint64) bool { return n == 0 }) // listed at 0: unused
			got[sp] = c
		}
		if cmp.Equal(want, got) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("counted (-the answers +the counters):\n%s", d)
	}
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), onNode1(p1IP4.String()))))
	w.apply()
	counts, err := w.d.Counters(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if c := counts[web]; c.Connections != 0 {
		t.Errorf("after the endpoint list changed: %d connections counted; OVS was expected to start the group again from zero", c.Connections)
	}
}

// answered makes n connections from ns to frontend and returns what the
// counters should say of them: n connections, each endpoint (port 8080)
// with the ones it answered.
func answered(n int, frontend netip.AddrPort, ns string) dataplanes.ServicePortCounts {
	owner := map[string]netip.Addr{"p1": p1IP4, "p2": p2IP4, "r1": remote}
	c := dataplanes.ServicePortCounts{Endpoints: map[netip.AddrPort]uint64{}}
	for id, k := range probeMany(n, func() (string, error) { return ovstest.ProbeTCP(ns, netip.Addr{}, frontend, probeTimeout) }) {
		c.Endpoints[netip.AddrPortFrom(owner[id], 8080)] += uint64(k)
		c.Connections += uint64(k)
	}
	return c
}
