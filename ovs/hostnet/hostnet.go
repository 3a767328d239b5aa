// Package hostnet is the OVS driver's side on the host: the gateway
// interface's addresses, the routes that steer the host's traffic for
// Services and other nodes' pods into the bridge, the nftables table that
// brings NodePort traffic into the bridge and masquerades what leaves the
// node, and the forwarding sysctls. It owns its routes by their protocol
// number (RouteProtocol) and its nftables table by name (TableName), and
// touches nothing else of the host: not the node's own interfaces, not
// other routes or tables.
package hostnet

import (
	"net/netip"
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// RouteProtocol marks the routes hostnet installs (`ip route show proto 83`).
const RouteProtocol = 83

// TableName is hostnet's nftables table (family inet).
const TableName = "switchyard"

// Capture by port. An external or load-balancer IP is captured only on its
// Services' ports, as kube-proxy does: its route into the bridge is in
// CaptureTable, which a rule (`ip rule`: fwmark CaptureMark lookup
// CaptureTable, at CaptureRulePriority) consults only for packets the
// nftables table marked, those to the address on a Service's protocol and
// port. The address's other ports (a DNS resolver, an SSH server that
// happens to be named) keep their own route.
const (
	CaptureTable        = 5359       // `ip route show table 5359`
	CaptureRulePriority = 5359       // `ip rule`: before main (32766)
	CaptureMark         = 0x00400000 // one bit: not kube-proxy's 0x4000/0x8000, Cilium's 0xf00, Istio's 0x539
)

// Capture is one captured port of an external or load-balancer IP.
type Capture struct {
	IP    netip.Addr
	Proto string // "tcp", "udp", "sctp"
	Port  uint16
}

// Config is the host side of one node's pod network.
type Config struct {
	// Gateway is the gateway interface (the bridge's internal port).
	Gateway string
	// PodPortPrefix starts the name of every pod veth's host end.
	PodPortPrefix string
	MTU           int
	// Addresses go on the gateway: the gateway IPs with their pod CIDR's
	// length.
	Addresses []netip.Prefix
	// VirtualIPs (one per family) are the next hop of routes into the
	// bridge and the source of what the bridge masquerades towards the
	// host, which masquerades it again on the way out.
	VirtualIPs []netip.Addr
	// NodePortIPs (one per family) are where NodePort traffic to the
	// node's addresses is DNATed, so that it enters the bridge.
	NodePortIPs []netip.Addr
	// NodeIPs are the addresses NodePorts listen on.
	NodeIPs []netip.Addr
	// PodCIDRs are this node's; ClusterPodCIDRs every node's. Pods reach
	// cluster pod CIDRs as themselves and everything else masqueraded.
	PodCIDRs        []netip.Prefix
	ClusterPodCIDRs []netip.Prefix
	// PeerRoutes lead to other nodes' pod CIDRs.
	PeerRoutes []Route
	// ServiceCIDRs (--ovs-service-cidrs) are routed into the bridge whole,
	// one route each, and a ClusterIP inside one gets no route of its own.
	// Without them every ClusterIP has a /32 (/128) route: at 100k
	// Services that is 100k routes, and every route added or removed
	// makes ovs-vswitchd before 3.1.5 dump the host's whole routing table
	// again (docs/scale.md).
	ServiceCIDRs []netip.Prefix
}

// Equal reports whether two configurations are the same.
func (c Config) Equal(o Config) bool {
	return c.Gateway == o.Gateway && c.PodPortPrefix == o.PodPortPrefix && c.MTU == o.MTU &&
		slices.Equal(c.Addresses, o.Addresses) && slices.Equal(c.VirtualIPs, o.VirtualIPs) &&
		slices.Equal(c.NodePortIPs, o.NodePortIPs) && slices.Equal(c.NodeIPs, o.NodeIPs) &&
		slices.Equal(c.PodCIDRs, o.PodCIDRs) && slices.Equal(c.ClusterPodCIDRs, o.ClusterPodCIDRs) &&
		slices.Equal(c.PeerRoutes, o.PeerRoutes) && slices.Equal(c.ServiceCIDRs, o.ServiceCIDRs)
}

// Route is one route hostnet installs.
type Route struct {
	Dst netip.Prefix
	// Via is the next hop; with ViaGateway it is reached on the gateway
	// interface (onlink: the bridge answers for every address), without it
	// the kernel finds the interface (a peer node's address).
	Via        netip.Addr
	ViaGateway bool
	// Table is the routing table: 0 for main, CaptureTable for a captured
	// address.
	Table int
}

// ProtoPort is a NodePort: a protocol ("tcp", "udp", "sctp") and a port.
type ProtoPort struct {
	Proto string
	Port  uint16
}

// Families lists the IP families the configuration has a gateway
// address in.
func (c Config) Families() graph.FamilySet {
	var s graph.FamilySet
	for _, a := range c.Addresses {
		s = s.With(graph.FamilyOf(a.Addr()))
	}
	return s
}

// frontendRoute is the route that brings the host's traffic for a Service
// address into the bridge (false when the family has no gateway).
func (c Config) frontendRoute(ip netip.Addr) (Route, bool) {
	vip, ok := graph.FirstOfFamily(c.VirtualIPs, graph.FamilyOf(ip))
	if !ok || !c.Families().Has(graph.FamilyOf(ip)) {
		return Route{}, false
	}
	return Route{Dst: netip.PrefixFrom(ip, ip.BitLen()), Via: vip, ViaGateway: true}, true
}

// clusterIPRoute is the route of a ClusterIP of its own: none when a
// service CIDR routed whole holds it.
func (c Config) clusterIPRoute(ip netip.Addr) (Route, bool) {
	for _, p := range c.ServiceCIDRs {
		if p.Contains(ip) {
			return Route{}, false
		}
	}
	return c.frontendRoute(ip)
}

// staticRoutes are the routes that depend only on the configuration: the
// service CIDRs and the virtual and NodePort addresses into the bridge,
// and the peers.
func (c Config) staticRoutes() []Route {
	var out []Route
	for _, p := range c.ServiceCIDRs {
		if r, ok := c.frontendRoute(p.Addr()); ok {
			r.Dst = p
			out = append(out, r)
		}
	}
	for _, ip := range append(append([]netip.Addr{}, c.VirtualIPs...), c.NodePortIPs...) {
		if c.Families().Has(graph.FamilyOf(ip)) {
			out = append(out, Route{Dst: netip.PrefixFrom(ip, ip.BitLen()), ViaGateway: true})
		}
	}
	return append(out, c.PeerRoutes...)
}

// captureRoutes are the routes of the captured addresses, in
// CaptureTable, except those routed whole (in main) anyway.
func (c Config) captureRoutes(captures []Capture, whole map[netip.Prefix]Route) map[netip.Prefix]Route {
	out := map[netip.Prefix]Route{}
	for _, cp := range captures {
		if r, ok := c.frontendRoute(cp.IP); ok {
			if _, routed := whole[r.Dst]; !routed {
				r.Table = CaptureTable
				out[r.Dst] = r
			}
		}
	}
	return out
}

// Routes lists every route the configuration, the frontends routed whole
// (ClusterIPs) and the captured ports call for, by destination.
// The map is sized for the ClusterIPs that have a route of their own
// (none inside the service CIDRs): a periodic resync builds it anew.
func (c Config) Routes(frontends []netip.Addr, captures []Capture) map[netip.Prefix]Route {
	own := 0
	for _, ip := range frontends {
		if _, ok := c.clusterIPRoute(ip); ok {
			own++
		}
	}
	out := make(map[netip.Prefix]Route, own+8)
	for _, ip := range frontends {
		if r, ok := c.clusterIPRoute(ip); ok {
			out[r.Dst] = r
		}
	}
	for _, r := range c.staticRoutes() {
		out[r.Dst] = r
	}
	for dst, r := range c.captureRoutes(captures, out) {
		out[dst] = r
	}
	return out
}
