package replies

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

func TestReject(t *testing.T) {
	syn := &layers.TCP{SrcPort: 40000, DstPort: 80, SYN: true, Seq: 1000, DataOffset: 5, Window: 1024}
	data := &layers.TCP{SrcPort: 40000, DstPort: 80, ACK: true, PSH: true, Seq: 2000, Ack: 7000, DataOffset: 5, Window: 1024}
	fin := &layers.TCP{SrcPort: 40000, DstPort: 80, FIN: true, Seq: 3000, DataOffset: 5}
	rst := &layers.TCP{SrcPort: 40000, DstPort: 80, RST: true, Seq: 3000, DataOffset: 5}
	udp := &layers.UDP{SrcPort: 40000, DstPort: 53}
	echo := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0), Id: 7, Seq: 1}
	unreach := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeDestinationUnreachable, layers.ICMPv4CodePort)}
	echo6 := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeEchoRequest, 0)}
	unreach6 := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeDestinationUnreachable, 4)}
	payload := func(n int) gopacket.Payload { return make(gopacket.Payload, n) }
	from4 := func(r reply) *reply {
		r.SrcMAC, r.DstMAC, r.Src, r.Dst, r.TTL = routerMAC.String(), clientMAC.String(), front4.String(), client4.String(), 64
		return &r
	}
	from6 := func(r reply, hop uint8) *reply {
		r.SrcMAC, r.DstMAC, r.Src, r.Dst, r.TTL = routerMAC.String(), clientMAC.String(), front6.String(), client6.String(), hop
		return &r
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want *reply
	}{
		{"a SYN gets a reset acknowledging it", frame(t, false, syn), from4(reply{TCP: "80>40000 AR seq=0 ack=1001"})},
		{"a segment with an ACK gets a reset with that sequence", frame(t, false, data, payload(10)), from4(reply{TCP: "80>40000 R seq=7000 ack=0"})},
		{"a FIN counts as one", frame(t, false, fin, payload(5)), from4(reply{TCP: "80>40000 AR seq=0 ack=3006"})},
		{"a reset is never answered", frame(t, false, rst), nil},
		{"UDP gets a port unreachable quoting the header and 8 bytes", frame(t, false, udp, payload(100)),
			from4(reply{ICMP: "DestinationUnreachable(Port)", Quote: 20 + 8})},
		{"an echo request gets a port unreachable", frame(t, false, echo), from4(reply{ICMP: "DestinationUnreachable(Port)", Quote: 20 + 8})},
		{"an ICMP error is never answered", frame(t, false, unreach, payload(28)), nil},
		{"an IPv6 SYN gets a reset", frame(t, true, syn), from6(reply{TCP: "80>40000 AR seq=0 ack=1001"}, 64)},
		{"IPv6 UDP gets a port unreachable quoting the packet", frame(t, true, udp, payload(100)),
			from6(reply{ICMP: "DestinationUnreachable(PortUnreachable)", Quote: 40 + 8 + 100}, 255)},
		{"a large IPv6 packet is quoted up to the minimum MTU", frame(t, true, udp, payload(1400)),
			from6(reply{ICMP: "DestinationUnreachable(PortUnreachable)", Quote: 1280 - 48}, 255)},
		{"an ICMPv6 echo gets a port unreachable", frame(t, true, echo6, payload(8)),
			from6(reply{ICMP: "DestinationUnreachable(PortUnreachable)", Quote: 40 + 4 + 8}, 255)},
		{"an ICMPv6 error is never answered", frame(t, true, unreach6, payload(52)), nil},
		{"not IP", arpFrame(t), nil},
		{"a truncated frame", frame(t, false, syn)[:20], nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, readReply(t, Reject(tc.in))); d != "" {
				t.Errorf("reply (-want +got):\n%s", d)
			}
		})
	}
}

func arpFrame(t *testing.T) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	eth := &layers.Ethernet{SrcMAC: clientMAC, DstMAC: layers.EthernetBroadcast, EthernetType: layers.EthernetTypeARP}
	arp := &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
		Operation: layers.ARPRequest, SourceHwAddress: clientMAC, SourceProtAddress: client4, DstHwAddress: make([]byte, 6), DstProtAddress: front4}
	if err := gopacket.SerializeLayers(buf, serialize, eth, arp); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
