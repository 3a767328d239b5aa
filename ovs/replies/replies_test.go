package replies

import (
	"encoding/binary"
	"fmt"
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

var (
	clientMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}
	routerMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0xfe}
	client4   = net.ParseIP("10.244.1.5").To4()
	front4    = net.ParseIP("10.96.0.10").To4()
	client6   = net.ParseIP("fd00:10:244:1::5")
	front6    = net.ParseIP("fd00:10:96::10")
)

// frame builds a received frame from the client to the frontend.
func frame(t *testing.T, v6 bool, l4 ...gopacket.SerializableLayer) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: clientMAC, DstMAC: routerMAC, EthernetType: layers.EthernetTypeIPv4}
	var ip gopacket.NetworkLayer = &layers.IPv4{Version: 4, IHL: 5, TTL: 63, SrcIP: client4, DstIP: front4, Protocol: protoOf(l4[0], false)}
	if v6 {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip = &layers.IPv6{Version: 6, HopLimit: 63, SrcIP: client6, DstIP: front6, NextHeader: protoOf(l4[0], true)}
	}
	b := serializeFrame(eth, ip, l4...)
	if b == nil {
		t.Fatal("could not build the frame")
	}
	return b
}

func protoOf(l gopacket.SerializableLayer, v6 bool) layers.IPProtocol {
	switch l.(type) {
	case *layers.TCP:
		return layers.IPProtocolTCP
	case *layers.UDP:
		return layers.IPProtocolUDP
	case *layers.ICMPv6:
		return layers.IPProtocolICMPv6
	}
	return layers.IPProtocolICMPv4
}

// reply is what a test reads back from a reply, with gopacket.
type reply struct {
	SrcMAC, DstMAC   string
	Src, Dst         string
	TTL              uint8
	TCP              string // ports and flags, seq and ack
	ICMP             string // type and code
	Quote            int    // bytes of the received packet quoted
	NATarget, NAOpts string
	NAFlags          uint8
}

func readReply(t *testing.T, b []byte) *reply {
	t.Helper()
	if b == nil {
		return nil
	}
	checksumsHold(t, b)
	p := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
	if err := p.ErrorLayer(); err != nil {
		t.Fatalf("the reply does not decode: %v", err.Error())
	}
	eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	r := &reply{SrcMAC: eth.SrcMAC.String(), DstMAC: eth.DstMAC.String()}
	switch ip := p.NetworkLayer().(type) {
	case *layers.IPv4:
		r.Src, r.Dst, r.TTL = ip.SrcIP.String(), ip.DstIP.String(), ip.TTL
	case *layers.IPv6:
		r.Src, r.Dst, r.TTL = ip.SrcIP.String(), ip.DstIP.String(), ip.HopLimit
	}
	if tcp, ok := p.Layer(layers.LayerTypeTCP).(*layers.TCP); ok {
		r.TCP = tcpString(tcp)
	}
	if icmp, ok := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4); ok {
		r.ICMP, r.Quote = icmp.TypeCode.String(), len(icmp.Payload)
	}
	if icmp, ok := p.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6); ok {
		r.ICMP = icmp.TypeCode.String()
		if icmp.TypeCode.Type() == layers.ICMPv6TypeDestinationUnreachable {
			r.Quote = len(icmp.Payload) - 4
		}
	}
	if na, ok := p.Layer(layers.LayerTypeICMPv6NeighborAdvertisement).(*layers.ICMPv6NeighborAdvertisement); ok {
		r.NATarget, r.NAFlags = na.TargetAddress.String(), na.Flags
		for _, o := range na.Options {
			r.NAOpts += o.String()
		}
	}
	return r
}

func tcpString(tcp *layers.TCP) string {
	flags := ""
	for _, f := range []struct {
		on   bool
		name string
	}{{tcp.SYN, "S"}, {tcp.ACK, "A"}, {tcp.RST, "R"}, {tcp.FIN, "F"}} {
		if f.on {
			flags += f.name
		}
	}
	return fmt.Sprintf("%d>%d %s seq=%d ack=%d", tcp.SrcPort, tcp.DstPort, flags, tcp.Seq, tcp.Ack)
}

// checksumsHold checks the IPv4 header's and the L4 checksum with the
// Internet checksum's own property (RFC 1071): the one's-complement sum of
// the checked bytes, checksum included, is all ones.
func checksumsHold(t *testing.T, b []byte) {
	t.Helper()
	ip := b[14:]
	var pseudo []byte
	var l4 []byte
	var proto byte
	switch binary.BigEndian.Uint16(b[12:14]) {
	case 0x0800:
		ihl := int(ip[0]&0x0f) * 4
		if sum(ip[:ihl]) != 0xffff {
			t.Fatal("IPv4 header checksum is wrong")
		}
		proto, l4 = ip[9], ip[ihl:binary.BigEndian.Uint16(ip[2:4])]
		if proto == 1 {
			pseudo = nil // ICMPv4 has no pseudo header
		} else {
			pseudo = append(append([]byte{}, ip[12:20]...), 0, proto, byte(len(l4)>>8), byte(len(l4)))
		}
	case 0x86dd:
		proto, l4 = ip[6], ip[40:40+int(binary.BigEndian.Uint16(ip[4:6]))]
		pseudo = append(append([]byte{}, ip[8:40]...), 0, 0, byte(len(l4)>>8), byte(len(l4)), 0, 0, 0, proto)
	}
	if sum(append(pseudo, l4...)) != 0xffff {
		t.Fatalf("the checksum of protocol %d is wrong", proto)
	}
}

func sum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}
