package openflow

import (
	"fmt"
	"net/netip"
)

// What a UDP datagram sent in IP fragments needs (docs/ovs.md,
// "Fragments"): the fragments after the first carry no L4 header, and
// OVS's userspace conntrack, which reassembles them for each ct action,
// applies the result's NAT to the first fragment only (lib/ipf.c); so a
// pipeline matches the connection's original tuple instead of the
// packet's ports, keeps the endpoint in the connection's label, and
// rewrites the later fragments' addresses itself (ovs/pipeline's
// fragments.go).

// NwFragLater matches the fragments of an IP packet after the first
// (nw_frag=later).
type NwFragLater struct{}

func (NwFragLater) Text() string { return "nw_frag=later" }

// The NXM_NX_IP_FRAG bits: a fragment (1), not the first (2).
func (NwFragLater) wire(b []byte) []byte { return appendOXM(b, fieldIPFrag, []byte{3}, []byte{3}) }

// CtOrigDst matches the original direction of the packet's connection:
// its protocol and destination address (ct_nw_proto, ct_nw_dst or
// ct_ipv6_dst; OVS needs ct_state=+trk-inv before it). For a new
// connection they are the packet's own, and every fragment of a datagram
// has them. (Not its port: OVS reads ct_tp_dst only from packets that
// carry an L4 header, so a later fragment's reads 0.)
type CtOrigDst struct {
	Proto IPProto
	IP    netip.Addr
}

func (c CtOrigDst) Text() string {
	name := "ct_nw_dst"
	if c.IP.Is6() {
		name = "ct_ipv6_dst"
	}
	return fmt.Sprintf("ct_nw_proto=%d,%s=%s", uint8(c.Proto), name, c.IP)
}

func (c CtOrigDst) wire(b []byte) []byte {
	b = appendOXM(b, fieldCtNwProto, []byte{byte(c.Proto)}, nil)
	if c.IP.Is4() {
		return appendOXMAddr(b, fieldCtNwDst, c.IP)
	}
	return appendOXMAddr(b, fieldCtIPv6Dst, c.IP)
}

// labelOf is an address as a conntrack label: an IPv4 address in bits
// 0..31 (where a 32-bit move from ct_label takes it), an IPv6 one whole.
func labelOf(ip netip.Addr) [16]byte {
	if ip.Is4() {
		var l [16]byte
		a := ip.As4()
		copy(l[12:], a[:])
		return l
	}
	return ip.As16()
}
