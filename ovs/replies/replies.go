// Package replies crafts the packets the OVS driver's controller answers
// packet-ins with: a TCP reset or an ICMP/ICMPv6 port unreachable for a
// frontend without endpoints (what upstream's "reject" sends), and an IPv6
// neighbour advertisement for the addresses the bridge routes. Frames are
// read and written with gopacket's layers, which compute the checksums.
package replies

import (
	"net"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// quotedV6Max is how much of the offending packet an ICMPv6 error quotes:
// the error must fit the IPv6 minimum MTU of 1280 bytes (RFC 4443 2.4(c)),
// less its own IPv6 (40) and ICMPv6 (8) headers.
const quotedV6Max = 1280 - 40 - 8

// Hop limits and TTLs of the replies; neighbour discovery requires 255
// (RFC 4861 7.1.2), and every ICMPv6 reply uses it.
const (
	ttl          = 64
	icmpv6Limit  = 255
	naFlags      = 0xe0 // router, solicited, override (RFC 4861 4.4)
	icmpv4Errors = "\x03\x04\x05\x0b\x0c"
)

var serialize = gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}

// received is what a reply needs of the frame it answers.
type received struct {
	eth *layers.Ethernet
	ip4 *layers.IPv4
	ip6 *layers.IPv6
	l4  []byte // the IP payload
	pkt gopacket.Packet
}

func decode(frame []byte) (*received, bool) {
	pkt := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.DecodeOptions{NoCopy: true})
	r := &received{pkt: pkt}
	var ok bool
	if r.eth, ok = pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet); !ok {
		return nil, false
	}
	if r.ip4, ok = pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
		r.l4 = r.ip4.Payload
		return r, true
	}
	if r.ip6, ok = pkt.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ok {
		r.l4 = r.ip6.Payload
		return r, true
	}
	return nil, false
}

// src and dst are the received packet's addresses.
func (r *received) src() net.IP {
	if r.ip4 != nil {
		return r.ip4.SrcIP
	}
	return r.ip6.SrcIP
}

func (r *received) dst() net.IP {
	if r.ip4 != nil {
		return r.ip4.DstIP
	}
	return r.ip6.DstIP
}

// answer serializes l4 (and what follows it) in an IP packet from the
// received packet's destination back to its source, in an Ethernet frame
// from its destination MAC back to its source MAC.
func (r *received) answer(proto layers.IPProtocol, l4 ...gopacket.SerializableLayer) []byte {
	eth := &layers.Ethernet{SrcMAC: r.eth.DstMAC, DstMAC: r.eth.SrcMAC}
	var ip gopacket.NetworkLayer
	if r.ip4 != nil {
		eth.EthernetType = layers.EthernetTypeIPv4
		ip = &layers.IPv4{Version: 4, IHL: 5, TTL: ttl, Protocol: proto, SrcIP: r.dst(), DstIP: r.src()}
	} else {
		eth.EthernetType = layers.EthernetTypeIPv6
		hop := uint8(ttl)
		if proto == layers.IPProtocolICMPv6 {
			hop = icmpv6Limit
		}
		ip = &layers.IPv6{Version: 6, NextHeader: proto, HopLimit: hop, SrcIP: r.dst(), DstIP: r.src()}
	}
	return serializeFrame(eth, ip, l4...)
}

func serializeFrame(eth *layers.Ethernet, ip gopacket.NetworkLayer, l4 ...gopacket.SerializableLayer) []byte {
	for _, l := range l4 {
		if c, ok := l.(interface {
			SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
		}); ok {
			c.SetNetworkLayerForChecksum(ip) // only fails for a non-IP layer
		}
	}
	buf := gopacket.NewSerializeBuffer()
	all := append([]gopacket.SerializableLayer{eth, ip.(gopacket.SerializableLayer)}, l4...)
	if err := gopacket.SerializeLayers(buf, serialize, all...); err != nil {
		return nil
	}
	return buf.Bytes()
}
