package replies

import (
	"strings"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// Reject answers a packet sent to a frontend without endpoints: TCP gets
// a reset, anything else an ICMP(v6) port unreachable, from the frontend
// address. It returns nil for what gets no answer: a reset, an ICMP
// error, a frame that is not IP or cannot be read.
func Reject(frame []byte) []byte {
	r, ok := decode(frame)
	if !ok {
		return nil
	}
	if tcp, ok := r.pkt.Layer(layers.LayerTypeTCP).(*layers.TCP); ok {
		if tcp.RST {
			return nil
		}
		return r.answer(layers.IPProtocolTCP, resetFor(tcp))
	}
	if r.ip4 != nil {
		if r.ip4.Protocol == layers.IPProtocolICMPv4 && (len(r.l4) == 0 || strings.IndexByte(icmpv4Errors, r.l4[0]) >= 0) {
			return nil
		}
		quote := append(append([]byte{}, r.ip4.Contents...), r.l4[:min(8, len(r.l4))]...)
		icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeDestinationUnreachable, layers.ICMPv4CodePort)}
		return r.answer(layers.IPProtocolICMPv4, icmp, gopacket.Payload(quote))
	}
	if r.ip6.NextHeader == layers.IPProtocolICMPv6 && (len(r.l4) == 0 || r.l4[0] < 128) {
		return nil // ICMPv6 errors are types 0-127 (RFC 4443 2.1)
	}
	quote := append(append([]byte{}, r.ip6.Contents...), r.l4...)
	quote = quote[:min(len(quote), quotedV6Max)]
	icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeDestinationUnreachable, layers.ICMPv6CodePortUnreachable)}
	// The four unused bytes after the checksum, then the quote.
	return r.answer(layers.IPProtocolICMPv6, icmp, gopacket.Payload(append(make([]byte, 4), quote...)))
}

// resetFor is the reset answering tcp (RFC 9293 3.10.7.1): to a segment
// with an ACK, a reset whose sequence number is that ACK; to one without,
// a reset acknowledging everything the segment occupied.
func resetFor(tcp *layers.TCP) *layers.TCP {
	rst := &layers.TCP{SrcPort: tcp.DstPort, DstPort: tcp.SrcPort, RST: true, DataOffset: 5}
	if tcp.ACK {
		rst.Seq = tcp.Ack
		return rst
	}
	length := uint32(len(tcp.Payload))
	if tcp.SYN {
		length++
	}
	if tcp.FIN {
		length++
	}
	rst.ACK, rst.Ack = true, tcp.Seq+length
	return rst
}
