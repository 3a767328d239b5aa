package openflow

import (
	"fmt"
	"net"
	"net/netip"
)

// Match is one match field of a flow.
type Match interface {
	// Text renders the field in ovs-ofctl syntax.
	Text() string
	// wire appends the field's OXM encoding.
	wire(b []byte) []byte
}

// InPort matches the ingress port.
type InPort uint32

func (p InPort) Text() string         { return fmt.Sprintf("in_port=%d", uint32(p)) }
func (p InPort) wire(b []byte) []byte { return appendOXM32(b, fieldInPort, uint32(p)) }

// EthType matches the Ethernet type.
type EthType uint16

// Ethernet types the pipeline uses.
const (
	EthIPv4 EthType = 0x0800
	EthIPv6 EthType = 0x86dd
	EthARP  EthType = 0x0806
)

func (e EthType) Text() string         { return fmt.Sprintf("dl_type=0x%04x", uint16(e)) }
func (e EthType) wire(b []byte) []byte { return appendOXM(b, fieldEthType, be16(nil, uint16(e)), nil) }

// IPProto matches the IP protocol number (needs an IPv4/IPv6 EthType).
type IPProto uint8

// IP protocol numbers.
const (
	ProtoICMP   IPProto = 1
	ProtoTCP    IPProto = 6
	ProtoUDP    IPProto = 17
	ProtoICMPv6 IPProto = 58
	ProtoSCTP   IPProto = 132
)

func (p IPProto) Text() string         { return fmt.Sprintf("nw_proto=%d", uint8(p)) }
func (p IPProto) wire(b []byte) []byte { return appendOXM(b, fieldIPProto, []byte{byte(p)}, nil) }

// IPSrc matches the IPv4 or IPv6 source address (a prefix).
type IPSrc netip.Prefix

// IPDst matches the IPv4 or IPv6 destination address (a prefix).
type IPDst netip.Prefix

func prefixText(name4, name6 string, p netip.Prefix) string {
	name := name4
	if p.Addr().Is6() {
		name = name6
	}
	if p.IsSingleIP() {
		return name + "=" + p.Addr().String()
	}
	return name + "=" + p.Masked().String()
}

func (p IPSrc) Text() string { return prefixText("nw_src", "ipv6_src", netip.Prefix(p)) }
func (p IPDst) Text() string { return prefixText("nw_dst", "ipv6_dst", netip.Prefix(p)) }

func prefixIPMask(p netip.Prefix) (net.IP, *net.IP) {
	ip := net.IP(p.Masked().Addr().AsSlice())
	if p.IsSingleIP() {
		return ip, nil
	}
	mask := net.IP(net.CIDRMask(p.Bits(), p.Addr().BitLen()))
	return ip, &mask
}

// appendPrefix appends an address field, with a mask unless it is one
// address.
func appendPrefix(b []byte, f4, f6 oxm, p netip.Prefix) []byte {
	f := f4
	if p.Addr().Is6() {
		f = f6
	}
	if p.IsSingleIP() {
		return appendOXMAddr(b, f, p.Addr())
	}
	ip := p.Masked().Addr().AsSlice()
	return appendOXM(b, f, ip, net.CIDRMask(p.Bits(), p.Addr().BitLen()))
}

func (p IPSrc) wire(b []byte) []byte {
	return appendPrefix(b, fieldIPv4Src, fieldIPv6Src, netip.Prefix(p))
}
func (p IPDst) wire(b []byte) []byte {
	return appendPrefix(b, fieldIPv4Dst, fieldIPv6Dst, netip.Prefix(p))
}

// L4Dst matches the TCP, UDP or SCTP destination port (needs IPProto).
type L4Dst struct {
	Proto IPProto
	Port  uint16
}

func (d L4Dst) Text() string { return fmt.Sprintf("%s_dst=%d", l4Name(d.Proto), d.Port) }
func (d L4Dst) wire(b []byte) []byte {
	f := fieldTCPDst
	switch d.Proto {
	case ProtoUDP:
		f = fieldUDPDst
	case ProtoSCTP:
		f = fieldSCTPDst
	}
	return appendOXM(b, f, be16(nil, d.Port), nil)
}

func l4Name(p IPProto) string {
	switch p {
	case ProtoTCP:
		return "tcp"
	case ProtoUDP:
		return "udp"
	case ProtoSCTP:
		return "sctp"
	}
	return fmt.Sprintf("proto%d", p)
}

// CtState matches conntrack state flags: Set must be on, Unset off.
type CtState struct {
	Set, Unset CtFlags
}

// CtFlags are conntrack state bits.
type CtFlags uint8

// Conntrack state bits.
const (
	CtNew CtFlags = 1 << iota
	CtEst
	CtRel
	CtRpl
	CtInv
	CtTrk
)

var ctFlagNames = []struct {
	f    CtFlags
	name string
}{{CtNew, "new"}, {CtEst, "est"}, {CtRel, "rel"}, {CtRpl, "rpl"}, {CtInv, "inv"}, {CtTrk, "trk"}}

func (c CtState) Text() string {
	s := "ct_state="
	for _, x := range ctFlagNames {
		if c.Set&x.f != 0 {
			s += "+" + x.name
		}
		if c.Unset&x.f != 0 {
			s += "-" + x.name
		}
	}
	return s
}

// CtFlags are in OVS's ct_state bit order (CS_NEW, CS_ESTABLISHED, ...,
// CS_TRACKED), so the flags are the NXM value and mask as they are.
func (c CtState) wire(b []byte) []byte {
	return appendOXM32Masked(b, fieldCtState, uint32(c.Set), uint32(c.Set|c.Unset))
}

// CtMark matches the conntrack mark under a mask.
type CtMark struct{ Value, Mask uint32 }

func (c CtMark) Text() string { return fmt.Sprintf("ct_mark=0x%x/0x%x", c.Value, c.Mask) }
func (c CtMark) wire(b []byte) []byte {
	return appendOXM32Masked(b, fieldCtMark, c.Value, c.Mask)
}

// Reg matches a 32-bit register (reg0..reg15) under a mask; Value is
// already shifted into place.
type Reg struct {
	Index       int
	Value, Mask uint32
}

func (r Reg) Text() string {
	if r.Mask == 0xffffffff {
		return fmt.Sprintf("reg%d=0x%x", r.Index, r.Value)
	}
	return fmt.Sprintf("reg%d=0x%x/0x%x", r.Index, r.Value, r.Mask)
}
func (r Reg) wire(b []byte) []byte {
	if r.Mask == 0xffffffff {
		return appendOXM32(b, fieldRegs[r.Index], r.Value)
	}
	return appendOXM32Masked(b, fieldRegs[r.Index], r.Value, r.Mask)
}

// XXReg matches a 128-bit register (xxreg0..xxreg3) exactly, e.g. an
// IPv6 address.
type XXReg struct {
	Index int
	Value [16]byte
}

func (x XXReg) Text() string { return fmt.Sprintf("xxreg%d=0x%x", x.Index, x.Value[:]) }
func (x XXReg) wire(b []byte) []byte {
	return appendOXM(b, fieldXXRegs[x.Index], x.Value[:], nil)
}

// ArpOp matches the ARP opcode.
type ArpOp uint16

func (a ArpOp) Text() string         { return fmt.Sprintf("arp_op=%d", uint16(a)) }
func (a ArpOp) wire(b []byte) []byte { return appendOXM(b, fieldArpOp, be16(nil, uint16(a)), nil) }

// ArpTpa matches the ARP target protocol address.
type ArpTpa netip.Addr

func (a ArpTpa) Text() string         { return "arp_tpa=" + netip.Addr(a).String() }
func (a ArpTpa) wire(b []byte) []byte { return appendOXMAddr(b, fieldArpTpa, netip.Addr(a)) }

// ICMPv6Type matches the ICMPv6 type (needs EthIPv6 and ProtoICMPv6).
type ICMPv6Type uint8

func (t ICMPv6Type) Text() string         { return fmt.Sprintf("icmpv6_type=%d", uint8(t)) }
func (t ICMPv6Type) wire(b []byte) []byte { return appendOXM(b, fieldICMPv6, []byte{byte(t)}, nil) }

// NDTarget matches the IPv6 neighbour discovery target address.
type NDTarget netip.Addr

func (t NDTarget) Text() string         { return "nd_target=" + netip.Addr(t).String() }
func (t NDTarget) wire(b []byte) []byte { return appendOXMAddr(b, fieldNDTarget, netip.Addr(t)) }

// ArpSpa matches the ARP sender protocol address.
type ArpSpa netip.Addr

func (a ArpSpa) Text() string         { return "arp_spa=" + netip.Addr(a).String() }
func (a ArpSpa) wire(b []byte) []byte { return appendOXMAddr(b, fieldArpSpa, netip.Addr(a)) }
