package replies

import (
	"net"

	"github.com/google/gopacket/layers"
)

// NeighborAdvert answers an IPv6 neighbour solicitation with mac (router,
// solicited, override): the bridge routes every address. It returns nil
// for anything else, for duplicate address detection (no source address)
// and for a requester asking about its own address.
func NeighborAdvert(frame []byte, mac net.HardwareAddr) []byte {
	r, ok := decode(frame)
	if !ok || r.ip6 == nil {
		return nil
	}
	ns, ok := r.pkt.Layer(layers.LayerTypeICMPv6NeighborSolicitation).(*layers.ICMPv6NeighborSolicitation)
	if !ok || r.ip6.SrcIP.IsUnspecified() || ns.TargetAddress.Equal(r.ip6.SrcIP) {
		return nil
	}
	eth := &layers.Ethernet{SrcMAC: mac, DstMAC: r.eth.SrcMAC, EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolICMPv6, HopLimit: icmpv6Limit, SrcIP: ns.TargetAddress, DstIP: r.ip6.SrcIP}
	icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeNeighborAdvertisement, 0)}
	na := &layers.ICMPv6NeighborAdvertisement{Flags: naFlags, TargetAddress: ns.TargetAddress,
		Options: layers.ICMPv6Options{{Type: layers.ICMPv6OptTargetAddress, Data: mac}}}
	return serializeFrame(eth, ip, icmp, na)
}
