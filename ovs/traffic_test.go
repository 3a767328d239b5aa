//go:build linux

package ovs

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	v1 "k8s.io/api/core/v1"
)

func ap(ip string, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr(ip), port)
}

// probeTimeout is how long a probe waits for an answer before it counts
// as dropped (generous: the suite runs with the race detector).
const probeTimeout = 3 * time.Second

func TestTrafficThroughServices(t *testing.T) {
	w := newWorld(t)
	tr := w.tr
	tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Type(v1.ServiceTypeNodePort), Port("http", tcp, 80, 30080))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080),
		onNode1(p1IP4.String()), onNode1(p2IP4.String()), onNode2(remote.String()))))
	tr.UpsertService(object.ServiceOf(Service("ns", "dns", ClusterIPs("10.96.0.53"), Port("dns", udp, 53, 0))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "dns-1", "dns", v4, SlicePort("dns", udp, 5353), onNode1(p1IP4.String()), onNode1(p2IP4.String()))))
	tr.UpsertService(object.ServiceOf(Service("ns", "big", ClusterIPs("10.96.0.54"), Port("dns", udp, 53, 0))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "big-1", "big", v4, SlicePort("dns", udp, 5353), onNode1(p1IP4.String()))))
	tr.UpsertService(object.ServiceOf(Service("ns", "big6", ClusterIPs("fd00:96::54"), Port("dns", udp, 53, 0))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "big6-1", "big6", v6, SlicePort("dns", udp, 5353), onNode1(p1IP6.String()))))
	tr.UpsertService(object.ServiceOf(Service("ns", "big-remote", ClusterIPs("10.96.0.55"), Port("dns", udp, 53, 0))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "big-remote-1", "big-remote", v4, SlicePort("dns", udp, 5353), onNode2(remote.String()))))
	tr.UpsertService(object.ServiceOf(Service("ns", "sticky", ClusterIPs("10.96.0.20"), ClientIPAffinity(60), Port("http", tcp, 80, 0))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "sticky-1", "sticky", v4, SlicePort("http", tcp, 8080),
		onNode1(p1IP4.String()), onNode1(p2IP4.String()), onNode2(remote.String()))))
	tr.UpsertService(object.ServiceOf(Service("ns", "empty", ClusterIPs("10.96.0.30"), Port("http", tcp, 80, 0), Port("dns", udp, 53, 0))))
	tr.UpsertService(object.ServiceOf(Service("ns", "hair", ClusterIPs("10.96.0.40"), Port("http", tcp, 80, 0))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "hair-1", "hair", v4, SlicePort("http", tcp, 8080), onNode1(p1IP4.String()))))
	tr.UpsertService(object.ServiceOf(Service("ns", "web6", ClusterIPs("10.96.0.60", "fd00:96::60"), Type(v1.ServiceTypeNodePort), Port("http", tcp, 80, 30060))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web6-4", "web6", v4, SlicePort("http", tcp, 8080), onNode1(p1IP4.String()))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web6-6", "web6", v6, SlicePort("http", tcp, 8080), onNode1(p1IP6.String()))))
	w.sync()

	c := w.client.NS
	t.Run("ClusterIP TCP spreads over local and remote endpoints", func(t *testing.T) {
		seen := probeMany(30, func() (string, error) { return ovstest.ProbeTCP(c, netip.Addr{}, ap("10.96.0.10", 80), probeTimeout) })
		for id := range seen {
			if id != "p1" && id != "p2" && id != "r1" {
				t.Fatalf("unexpected answer %q (all: %v)", id, seen)
			}
		}
		if len(seen) < 2 {
			t.Fatalf("30 connections reached only %v", seen)
		}
	})
	t.Run("ClusterIP UDP spreads", func(t *testing.T) {
		seen := probeMany(30, func() (string, error) { return ovstest.ProbeUDP(c, netip.Addr{}, ap("10.96.0.53", 53), probeTimeout) })
		if len(seen) != 2 || seen["p1"] == 0 || seen["p2"] == 0 {
			t.Fatalf("answers %v, want p1 and p2", seen)
		}
	})
	// upstream's "should be able to handle large requests: udp": 2 000
	// bytes each way, so IP fragments, to a local and a remote endpoint
	// and over IPv6;
	// three datagrams from one socket (a new connection, then an
	// established one).
	t.Run("ClusterIP UDP datagrams over the MTU", func(t *testing.T) {
		if id, err := ovstest.ProbeUDPSized(w.r1.NS, ap(p1IP4.String(), 5353), 2000, 3, probeTimeout); id != "p1" || err != nil {
			t.Errorf("pod to pod, node-2 to node-1: %q, %v", id, err)
		}
		for vip, want := range map[string]string{"10.96.0.54": "p1", "10.96.0.55": "r1", "fd00:96::54": "p1"} {
			for range 3 {
				if id, err := ovstest.ProbeUDPSized(c, ap(vip, 53), 2000, 3, probeTimeout); id != want || err != nil {
					t.Fatalf("%s: %q, %v; want %s", vip, id, err, want)
				}
			}
		}
	})
	t.Run("NodePort from an external client", func(t *testing.T) {
		seen := probeMany(10, func() (string, error) {
			return ovstest.ProbeTCP(w.c.Client, netip.Addr{}, netip.AddrPortFrom(nodeIP, 30080), probeTimeout)
		})
		for id := range seen {
			if id != "p1" && id != "p2" && id != "r1" {
				t.Fatalf("answers %v", seen)
			}
		}
	})
	t.Run("session affinity sticks", func(t *testing.T) {
		seen := probeMany(15, func() (string, error) { return ovstest.ProbeTCP(c, netip.Addr{}, ap("10.96.0.20", 80), probeTimeout) })
		if len(seen) != 1 {
			t.Fatalf("one client reached %v, want a single endpoint", seen)
		}
	})
	t.Run("no endpoints: TCP reset and ICMP unreachable, not a timeout", func(t *testing.T) {
		start := time.Now()
		_, err := ovstest.ProbeTCP(c, netip.Addr{}, ap("10.96.0.30", 80), probeTimeout)
		if !errors.Is(err, ovstest.ErrRefused) {
			t.Fatalf("TCP: %v, want refused", err)
		}
		if _, err := ovstest.ProbeUDP(c, netip.Addr{}, ap("10.96.0.30", 53), probeTimeout); !errors.Is(err, ovstest.ErrRefused) {
			t.Fatalf("UDP: %v, want refused", err)
		}
		if el := time.Since(start); el > time.Second {
			t.Fatalf("refusals took %v", el)
		}
	})
	t.Run("hairpin: a pod reaches itself through its Service", func(t *testing.T) {
		for range 3 {
			id, err := ovstest.ProbeTCP(w.p1.NS, netip.Addr{}, ap("10.96.0.40", 80), probeTimeout)
			if err != nil || id != "p1" {
				t.Fatalf("got %q, %v", id, err)
			}
		}
	})
	t.Run("IPv6 NodePort from an external client", func(t *testing.T) {
		id, err := ovstest.ProbeTCP(w.c.Client, netip.Addr{}, netip.AddrPortFrom(node6, 30060), probeTimeout)
		if err != nil || id != "p1" {
			t.Fatalf("got %q, %v", id, err)
		}
	})
	t.Run("IPv6 ClusterIP", func(t *testing.T) {
		id, err := ovstest.ProbeTCP(c, netip.Addr{}, ap("fd00:96::60", 80), probeTimeout)
		if err != nil || id != "p1" {
			t.Fatalf("got %q, %v", id, err)
		}
	})
}

func TestExternalTrafficPolicyAndSourceRanges(t *testing.T) {
	w := newWorld(t)
	outside := netip.MustParseAddr("198.51.99.5")
	w.c.AddClientAddress(outside)
	tr := w.tr
	// LoadBalancer, ETP=Local, reachable only from 198.51.100.0/24 and the
	// pod network (source ranges apply to every source, pods included, as
	// upstream's firewall chain does); one endpoint here (p1), one on node-2.
	tr.UpsertService(object.ServiceOf(Service("ns", "lb", ClusterIPs("10.96.0.80"), Type(v1.ServiceTypeLoadBalancer), ETPLocal,
		Port("http", tcp, 80, 30081), HealthCheckNodePort(32100), Ingress("203.0.113.80"), SourceRanges("198.51.100.0/24", "10.244.1.0/24"))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "lb-1", "lb", v4, SlicePort("http", tcp, 8080), onNode1(p1IP4.String()), onNode2(remote.String()))))
	// ETP=Local with no local endpoint.
	tr.UpsertService(object.ServiceOf(Service("ns", "far", ClusterIPs("10.96.0.81"), Type(v1.ServiceTypeNodePort), ETPLocal, Port("http", tcp, 80, 30082))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "far-1", "far", v4, SlicePort("http", tcp, 8080), onNode2(remote.String()))))
	// ExternalIP.
	tr.UpsertService(object.ServiceOf(Service("ns", "ext", ClusterIPs("10.96.0.82"), ExternalIPs("192.0.2.82"), Port("http", tcp, 80, 0))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "ext-1", "ext", v4, SlicePort("http", tcp, 8080), onNode1(p2IP4.String()))))
	w.sync()

	client, lbIP := w.c.Client, ap("203.0.113.80", 80)
	t.Run("outside traffic to an ETP=Local LB IP reaches only the local endpoint", func(t *testing.T) {
		seen := probeMany(10, func() (string, error) { return ovstest.ProbeTCP(client, netip.Addr{}, lbIP, probeTimeout) })
		if len(seen) != 1 || seen["p1"] != 10 {
			t.Fatalf("answers %v, want p1 only", seen)
		}
	})
	t.Run("pods short-circuit an ETP=Local LB IP to every endpoint", func(t *testing.T) {
		seen := probeMany(30, func() (string, error) { return ovstest.ProbeTCP(w.client.NS, netip.Addr{}, lbIP, probeTimeout) })
		if seen["p1"] == 0 || seen["r1"] == 0 || len(seen) != 2 {
			t.Fatalf("answers %v, want p1 and r1", seen)
		}
	})
	t.Run("a source outside loadBalancerSourceRanges is dropped", func(t *testing.T) {
		if _, err := ovstest.ProbeTCP(client, outside, lbIP, 500*time.Millisecond); !errors.Is(err, ovstest.ErrTimeout) {
			t.Fatalf("err = %v, want no answer (dropped)", err)
		}
	})
	t.Run("the NodePort of an ETP=Local service is not filtered by source ranges", func(t *testing.T) {
		if id, err := ovstest.ProbeTCP(client, outside, netip.AddrPortFrom(nodeIP, 30081), probeTimeout); id != "p1" {
			t.Fatalf("got %q, %v", id, err)
		}
	})
	t.Run("ETP=Local without a local endpoint drops outside traffic, pods still get through", func(t *testing.T) {
		if _, err := ovstest.ProbeTCP(client, netip.Addr{}, netip.AddrPortFrom(nodeIP, 30082), 500*time.Millisecond); !errors.Is(err, ovstest.ErrTimeout) {
			t.Fatalf("outside: %v, want dropped", err)
		}
		if id, err := ovstest.ProbeTCP(w.client.NS, netip.Addr{}, netip.AddrPortFrom(nodeIP, 30082), probeTimeout); id != "r1" {
			t.Fatalf("pod: %q, %v", id, err)
		}
	})
	t.Run("ExternalIP from outside", func(t *testing.T) {
		if id, err := ovstest.ProbeTCP(client, netip.Addr{}, ap("192.0.2.82", 80), probeTimeout); id != "p2" {
			t.Fatalf("got %q, %v", id, err)
		}
	})
}
