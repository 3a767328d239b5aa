package pipeline

import (
	"net"
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// Config is what the pipeline needs to know of the node and the bridge.
type Config struct {
	// CtZone is the DNAT conntrack zone; CtZone+1 is the SNAT zone.
	CtZone uint16
	// RouterMAC is the bridge's virtual router: the source of every packet
	// it routes and the address its neighbour responder gives for every
	// address asked about (pods and the host reach everything through it).
	RouterMAC net.HardwareAddr
	// NodeIPs are the node's addresses: NodePorts listen on them, and
	// traffic from the gateway port with one of them as its source is the
	// node's own.
	NodeIPs []netip.Addr
	// PodCIDRs are this node's pod CIDRs (one per family); their first
	// addresses are the gateway IPs.
	PodCIDRs []netip.Prefix
	// VirtualIPs (one per family) are the source the bridge gives
	// connections it masquerades towards the host (which masquerades them
	// again to its own address on the way out), and the next hop of the
	// host's routes into the bridge.
	VirtualIPs []netip.Addr
	// NodePortIPs (one per family) are where the host DNATs NodePort
	// traffic that reaches it, so that it enters the bridge.
	NodePortIPs []netip.Addr
	// ServiceCIDRs (--ovs-service-cidrs) are the ranges ClusterIPs come
	// from; the host routes each into the bridge whole (hostnet.Config).
	ServiceCIDRs []netip.Prefix
	// GatewayPort and GatewayMAC are the gateway port (the host's side of
	// the bridge); 0 and nil until the port is up.
	GatewayPort uint32
	GatewayMAC  net.HardwareAddr
	// TunnelPort is the overlay's tunnel port; 0 in routed mode (other
	// nodes' pods are then reached through the host).
	TunnelPort uint32
	// ControllerID goes in controller() actions.
	ControllerID uint16
	// CommitNullSNAT commits the connections that are no service's with a
	// null SNAT (nat(src): a new source port only if the reply tuple is
	// taken), as Linux conntrack binds every connection: a client reaching
	// an endpoint straight from the source port a Service connection to it
	// used gets another port instead of sharing that connection's reply
	// tuple (docs/ovs.md, "Source-port clashes"). The driver decides it
	// from the datapath and --ovs-conntrack-null-snat.
	CommitNullSNAT bool
}

// GatewayIPs are the pods' default gateways: the first address of each
// pod CIDR, held by the host on the gateway port.
func (c *Config) GatewayIPs() []netip.Addr {
	out := make([]netip.Addr, 0, len(c.PodCIDRs))
	for _, p := range c.PodCIDRs {
		out = append(out, GatewayOf(p))
	}
	return out
}

// GatewayOf is the gateway IP of a pod CIDR: its first address.
func GatewayOf(p netip.Prefix) netip.Addr { return p.Masked().Addr().Next() }

// Pod is a pod attached to the bridge (learned from OVSDB).
type Pod struct {
	Name string // namespace/name, for logs
	Port uint32
	MAC  net.HardwareAddr
	IPs  []netip.Addr
}

// Peer is another node whose pods the overlay reaches through the tunnel.
type Peer struct {
	Name     string
	IP       netip.Addr // the tunnel's remote end
	PodCIDRs []netip.Prefix
}

func (c *Config) snatZone() uint16 { return c.CtZone + 1 }

func ethType(f graph.IPFamily) openflow.EthType {
	if f == graph.IPv6 {
		return openflow.EthIPv6
	}
	return openflow.EthIPv4
}

func host(ip netip.Addr) netip.Prefix { return netip.PrefixFrom(ip, ip.BitLen()) }

// Packet-in userdata, first byte.
const (
	PacketInReject   byte = 1
	PacketInNeighbor byte = 2
)
