package engine

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
)

// The first packet a trace starts from, by where the connection comes
// in: a pod's port, the gateway (the node; outside, with the host's
// NodePort DNAT), the tunnel (another node's pod); and the sources no
// port can carry.
func TestTraceFlow(t *testing.T) {
	m := testModel(t)
	addr := netip.MustParseAddr
	m.Sync(graph.Snapshot{
		Node:  graph.Node{Name: "node-1", IPs: []netip.Addr{addr("192.168.1.10"), addr("fd00::10")}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fd00:244:1::/64")}},
		Peers: []graph.Node{{Name: "node-2", IPs: []netip.Addr{addr("192.168.1.11")}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.2.0/24")}}},
	})
	podMAC, _ := net.ParseMAC("02:00:00:00:00:05")
	m.SetPorts(Ports{GatewayPort: 1, GatewayMAC: testConfig().RouterMAC, TunnelPort: 2,
		Pods: []PodPort{{Pod: pipeline.Pod{Name: "ns/p", Port: 7, MAC: podMAC, IPs: []netip.Addr{addr("10.244.1.5"), addr("fd00:244:1::5")}}}}})
	const router = "dl_dst=0a:53:59:00:00:01"
	for _, tc := range []struct {
		name   string
		c      graph.Connection
		want   string
		whyNot string
	}{
		{"a pod", graph.Connection{Src: addr("10.244.1.5"), Dst: addr("10.96.0.10"), Port: 80, Protocol: graph.TCP},
			"in_port=7,tcp,dl_src=02:00:00:00:00:05," + router + ",nw_src=10.244.1.5,nw_dst=10.96.0.10,nw_ttl=64,tp_src=40000,tp_dst=80,tcp_flags=syn", ""},
		{"a pod over IPv6, SCTP", graph.Connection{Src: addr("fd00:244:1::5"), Dst: addr("fd00:96::10"), Port: 80, Protocol: graph.SCTP},
			"in_port=7,sctp6,dl_src=02:00:00:00:00:05," + router + ",ipv6_src=fd00:244:1::5,ipv6_dst=fd00:96::10,nw_ttl=64,tp_src=40000,tp_dst=80", ""},
		{"a pod to a NodePort: no DNAT", graph.Connection{Src: addr("10.244.1.5"), Dst: addr("192.168.1.10"), Port: 30080, Protocol: graph.TCP},
			"in_port=7,tcp,dl_src=02:00:00:00:00:05," + router + ",nw_src=10.244.1.5,nw_dst=192.168.1.10,nw_ttl=64,tp_src=40000,tp_dst=30080,tcp_flags=syn", ""},
		{"the node to its NodePort: the host's DNAT", graph.Connection{Src: addr("192.168.1.10"), Dst: addr("192.168.1.10"), Port: 30080, Protocol: graph.TCP},
			"in_port=1,tcp,dl_src=0a:53:59:00:00:01," + router + ",nw_src=192.168.1.10,nw_dst=169.254.255.252,nw_ttl=64,tp_src=40000,tp_dst=30080,tcp_flags=syn", ""},
		{"outside to an LB IP", graph.Connection{Src: addr("198.51.100.7"), Dst: addr("203.0.113.10"), Port: 443, Protocol: graph.UDP},
			"in_port=1,udp,dl_src=0a:53:59:00:00:01," + router + ",nw_src=198.51.100.7,nw_dst=203.0.113.10,nw_ttl=64,tp_src=40000,tp_dst=443", ""},
		{"another node's pod, through the tunnel", graph.Connection{Src: addr("10.244.2.9"), Dst: addr("10.96.0.10"), Port: 80, Protocol: graph.TCP},
			"in_port=2,tun_src=192.168.1.11,tcp," + "dl_src=0a:53:59:00:00:01," + router + ",nw_src=10.244.2.9,nw_dst=10.96.0.10,nw_ttl=64,tp_src=40000,tp_dst=80,tcp_flags=syn", ""},
		{"a pod not on the bridge", graph.Connection{Src: addr("10.244.1.99"), Dst: addr("10.96.0.10"), Port: 80, Protocol: graph.TCP}, "", "no pod with address 10.244.1.99"},
	} {
		got, err := m.TraceFlow(tc.c, 40000)
		if got != tc.want || (err == nil) != (tc.whyNot == "") || (err != nil && !strings.Contains(err.Error(), tc.whyNot)) {
			t.Errorf("%s:\n got %s (%v)\nwant %s (%s)", tc.name, got, err, tc.want, tc.whyNot)
		}
	}
	bare := NewModel(testConfig(), false)
	if _, err := bare.TraceFlow(graph.Connection{Src: addr("198.51.100.7"), Dst: addr("10.96.0.10"), Port: 80, Protocol: graph.TCP}, 1); err == nil || !strings.Contains(err.Error(), "no gateway port") {
		t.Errorf("a bridge without its gateway: %v", err)
	}
}
