//go:build linux

package ovs

import (
	"errors"
	"maps"
	"net/netip"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// --service-counters' source on a real bridge: N connections through a
// Service are read back as N, each endpoint's count being the answers it
// gave; connections to a Service without endpoints count as rejected. A
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
	w.sync()
	web := graph.ServicePortName{Namespace: "ns", Name: "web", Port: "http", Protocol: graph.TCP}
	empty := graph.ServicePortName{Namespace: "ns", Name: "empty", Port: "http", Protocol: graph.TCP}
	const n, refused = 30, 3
	answers := probeMany(n, func() (string, error) {
		return ovstest.ProbeTCP(w.client.NS, netip.Addr{}, ap("10.96.0.10", 80), probeTimeout)
	})
	for range refused {
		if _, err := ovstest.ProbeTCP(w.client.NS, netip.Addr{}, ap("10.96.0.30", 80), probeTimeout); !errors.Is(err, ovstest.ErrRefused) {
			t.Fatalf("a connection to a Service without endpoints: %v; want refused", err)
		}
	}
	owner := map[string]netip.AddrPort{"p1": netip.AddrPortFrom(p1IP4, 8080), "p2": netip.AddrPortFrom(p2IP4, 8080), "r1": netip.AddrPortFrom(remote, 8080)}
	want := map[netip.AddrPort]uint64{}
	for id, k := range answers {
		want[owner[id]] = uint64(k)
	}
	// OVS adds a datapath flow's packets to the groups it went through
	// when its revalidators next run.
	var got dataplanes.ServicePortCounts
	var rejected uint64
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		counts, err := w.d.Counters(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got, rejected = counts[web], counts[empty].Rejected
		if got.Connections == n && rejected == refused {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got.Connections != n || rejected != refused || !maps.Equal(got.Endpoints, want) {
		t.Errorf("counted %d connections %v, %d rejected; the answers were %v (%d), %d refused", got.Connections, got.Endpoints, rejected, want, n, refused)
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
