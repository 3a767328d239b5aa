package pipeline

import (
	"net"
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// PortLocal is the bridge's own port.
const PortLocal = uint32(openflow.PortLocal)

// Config is what the pipeline needs to know of the node and the bridge.
type Config struct {
	// CtZone is the DNAT conntrack zone; CtZone+1 is the SNAT zone.
	CtZone uint16
	// GatewayMAC is the virtual router's MAC: pods and the uplink's next
	// hop send to it, and it is the source of routed packets.
	GatewayMAC net.HardwareAddr
	// GatewayIPs are the pods' default gateways (one per family), answered
	// by the neighbour responder.
	GatewayIPs []netip.Addr
	// NodeIPs are the addresses NodePorts listen on and masqueraded
	// traffic leaves from; answered by the neighbour responder.
	NodeIPs []netip.Addr
	// HairpinIPs are the virtual sources of hairpin connections, one per
	// family.
	HairpinIPs []netip.Addr
	// UplinkPort is the uplink's OpenFlow port (0: no uplink); traffic not
	// for a local pod leaves through it to UplinkNextHopMAC.
	UplinkPort       uint32
	UplinkNextHopMAC net.HardwareAddr
	// ControllerID goes in controller() actions.
	ControllerID uint16
}

// Pod is a pod attached to the bridge (learned from OVSDB).
type Pod struct {
	Name string // namespace/name, for logs
	Port uint32
	MAC  net.HardwareAddr
	IPs  []netip.Addr
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
