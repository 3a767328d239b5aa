package engine

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// TraceFlow describes, in ofproto/trace's flow syntax, the first packet of
// a new connection c (from source port srcPort) as it enters the bridge:
// on a local pod's port when the source is one of them, on the tunnel from
// another node's pod in overlay mode, else on the gateway port (the node's
// own traffic, and what the host forwards), with the host's NodePort DNAT
// applied first (a node address's NodePort reaches the bridge at the
// NodePort IP). It fails when the bridge has no port the packet could
// come in by (no gateway yet, no such pod).
func (m *Model) TraceFlow(c graph.Connection, srcPort uint16) (string, error) {
	in, err := m.ingress(c.Src)
	if err != nil {
		return "", err
	}
	dst := c.Dst
	if in.gateway && slices.Contains(m.cfg.NodeIPs, dst) {
		if np, ok := graph.FirstOfFamily(m.cfg.NodePortIPs, graph.FamilyOf(dst)); ok {
			dst = np
		}
	}
	proto, v6 := strings.ToLower(string(c.Protocol)), c.Dst.Is6()
	if v6 {
		proto += "6"
	}
	fields := []string{in.port, proto, "dl_src=" + in.from, "dl_dst=" + m.cfg.RouterMAC.String()}
	if v6 {
		fields = append(fields, "ipv6_src="+c.Src.String(), "ipv6_dst="+dst.String())
	} else {
		fields = append(fields, "nw_src="+c.Src.String(), "nw_dst="+dst.String())
	}
	fields = append(fields, "nw_ttl=64", fmt.Sprintf("tp_src=%d", srcPort), fmt.Sprintf("tp_dst=%d", c.Port))
	if c.Protocol == graph.TCP {
		fields = append(fields, "tcp_flags=syn")
	}
	return strings.Join(fields, ","), nil
}

// ingressPort is where a packet enters the bridge, and its source MAC.
type ingressPort struct {
	port    string // in_port=N (and tun_src=IP on the tunnel)
	from    string
	gateway bool
}

// ingress finds the port a packet from src comes in by.
func (m *Model) ingress(src netip.Addr) (ingressPort, error) {
	for _, p := range m.pods {
		if slices.Contains(p.IPs, src) {
			return ingressPort{port: fmt.Sprintf("in_port=%d", p.Port), from: p.MAC.String()}, nil
		}
	}
	if m.cfg.TunnelPort != 0 {
		for _, peer := range m.peers {
			if slices.ContainsFunc(peer.PodCIDRs, func(p netip.Prefix) bool { return p.Contains(src) }) {
				tp := m.tunnelPeer(peer)
				return ingressPort{port: fmt.Sprintf("in_port=%d,tun_src=%s", m.cfg.TunnelPort, tp.IP), from: m.cfg.RouterMAC.String()}, nil
			}
		}
	}
	if slices.ContainsFunc(m.cfg.PodCIDRs, func(p netip.Prefix) bool { return p.Contains(src) }) && !slices.Contains(m.cfg.GatewayIPs(), src) {
		return ingressPort{}, fmt.Errorf("no pod with address %s is on the bridge", src)
	}
	if m.cfg.GatewayPort == 0 {
		return ingressPort{}, fmt.Errorf("the bridge has no gateway port yet")
	}
	return ingressPort{port: fmt.Sprintf("in_port=%d", m.cfg.GatewayPort), from: m.cfg.GatewayMAC.String(), gateway: true}, nil
}
