package openflow

import (
	"fmt"
	"net"
	"net/netip"

	"antrea.io/libOpenflow/openflow15"
)

// Match is one match field of a flow.
type Match interface {
	// Text renders the field in ovs-ofctl syntax.
	Text() string
	// add appends the field to an OpenFlow match.
	add(m *openflow15.Match) error
}

// InPort matches the ingress port.
type InPort uint32

func (p InPort) Text() string { return fmt.Sprintf("in_port=%d", uint32(p)) }
func (p InPort) add(m *openflow15.Match) error {
	m.AddField(*openflow15.NewInPortField(uint32(p)))
	return nil
}

// EthType matches the Ethernet type.
type EthType uint16

// Ethernet types the pipeline uses.
const (
	EthIPv4 EthType = 0x0800
	EthIPv6 EthType = 0x86dd
	EthARP  EthType = 0x0806
)

func (e EthType) Text() string { return fmt.Sprintf("dl_type=0x%04x", uint16(e)) }
func (e EthType) add(m *openflow15.Match) error {
	m.AddField(*openflow15.NewEthTypeField(uint16(e)))
	return nil
}

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

func (p IPProto) Text() string { return fmt.Sprintf("nw_proto=%d", uint8(p)) }
func (p IPProto) add(m *openflow15.Match) error {
	m.AddField(*openflow15.NewIpProtoField(uint8(p)))
	return nil
}

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

func (p IPSrc) add(m *openflow15.Match) error {
	ip, mask := prefixIPMask(netip.Prefix(p))
	if netip.Prefix(p).Addr().Is4() {
		m.AddField(*openflow15.NewIpv4SrcField(ip, mask))
	} else {
		m.AddField(*openflow15.NewIpv6SrcField(ip, mask))
	}
	return nil
}

func (p IPDst) add(m *openflow15.Match) error {
	ip, mask := prefixIPMask(netip.Prefix(p))
	if netip.Prefix(p).Addr().Is4() {
		m.AddField(*openflow15.NewIpv4DstField(ip, mask))
	} else {
		m.AddField(*openflow15.NewIpv6DstField(ip, mask))
	}
	return nil
}

// L4Dst matches the TCP, UDP or SCTP destination port (needs IPProto).
type L4Dst struct {
	Proto IPProto
	Port  uint16
}

func (d L4Dst) Text() string { return fmt.Sprintf("%s_dst=%d", l4Name(d.Proto), d.Port) }
func (d L4Dst) add(m *openflow15.Match) error {
	switch d.Proto {
	case ProtoTCP:
		m.AddField(*openflow15.NewTcpDstField(d.Port))
	case ProtoUDP:
		m.AddField(*openflow15.NewUdpDstField(d.Port))
	case ProtoSCTP:
		m.AddField(*openflow15.NewSctpDstField(d.Port))
	default:
		return fmt.Errorf("no L4 port for protocol %d", d.Proto)
	}
	return nil
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

func (c CtState) add(m *openflow15.Match) error {
	st := openflow15.NewCTStates()
	set := map[CtFlags][2]func(){
		CtNew: {st.SetNew, st.UnsetNew}, CtEst: {st.SetEst, st.UnsetEst}, CtRel: {st.SetRel, st.UnsetRel},
		CtRpl: {st.SetRpl, st.UnsetRpl}, CtInv: {st.SetInv, st.UnsetInv}, CtTrk: {st.SetTrk, st.UnsetTrk},
	}
	for _, x := range ctFlagNames {
		if c.Set&x.f != 0 {
			set[x.f][0]()
		}
		if c.Unset&x.f != 0 {
			set[x.f][1]()
		}
	}
	m.AddField(*openflow15.NewCTStateMatchField(st))
	return nil
}

// CtMark matches the conntrack mark under a mask.
type CtMark struct{ Value, Mask uint32 }

func (c CtMark) Text() string { return fmt.Sprintf("ct_mark=0x%x/0x%x", c.Value, c.Mask) }
func (c CtMark) add(m *openflow15.Match) error {
	mask := c.Mask
	m.AddField(*openflow15.NewCTMarkMatchField(c.Value, &mask))
	return nil
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
func (r Reg) add(m *openflow15.Match) error {
	mask := r.Mask
	if mask == 0xffffffff {
		mask = 0
	}
	m.AddField(*openflow15.NewRegMatchFieldWithMask(r.Index, r.Value, mask))
	return nil
}

// XXReg matches a 128-bit register (xxreg0..xxreg3) exactly, e.g. an
// IPv6 address.
type XXReg struct {
	Index int
	Value [16]byte
}

func (x XXReg) Text() string { return fmt.Sprintf("xxreg%d=0x%x", x.Index, x.Value[:]) }
func (x XXReg) add(m *openflow15.Match) error {
	f, err := openflow15.FindFieldHeaderByName(fmt.Sprintf("NXM_NX_XXREG%d", x.Index), false)
	if err != nil {
		return err
	}
	v := x.Value
	f.Value = &openflow15.ByteArrayField{Data: v[:], Length: 16}
	m.AddField(*f)
	return nil
}

// ArpOp matches the ARP opcode.
type ArpOp uint16

func (a ArpOp) Text() string { return fmt.Sprintf("arp_op=%d", uint16(a)) }
func (a ArpOp) add(m *openflow15.Match) error {
	m.AddField(*openflow15.NewArpOperField(uint16(a)))
	return nil
}

// ArpTpa matches the ARP target protocol address.
type ArpTpa netip.Addr

func (a ArpTpa) Text() string { return "arp_tpa=" + netip.Addr(a).String() }
func (a ArpTpa) add(m *openflow15.Match) error {
	m.AddField(*openflow15.NewArpTpaField(net.IP(netip.Addr(a).AsSlice())))
	return nil
}

// ICMPv6Type matches the ICMPv6 type (needs EthIPv6 and ProtoICMPv6).
type ICMPv6Type uint8

func (t ICMPv6Type) Text() string { return fmt.Sprintf("icmpv6_type=%d", uint8(t)) }
func (t ICMPv6Type) add(m *openflow15.Match) error {
	f, err := openflow15.FindFieldHeaderByName("OXM_OF_ICMPV6_TYPE", false)
	if err != nil {
		return err
	}
	f.Value = &openflow15.IcmpTypeField{Type: uint8(t)}
	m.AddField(*f)
	return nil
}

// NDTarget matches the IPv6 neighbour discovery target address.
type NDTarget netip.Addr

func (t NDTarget) Text() string { return "nd_target=" + netip.Addr(t).String() }
func (t NDTarget) add(m *openflow15.Match) error {
	f, err := openflow15.FindFieldHeaderByName("OXM_OF_IPV6_ND_TARGET", false)
	if err != nil {
		return err
	}
	f.Value = &openflow15.Ipv6DstField{Ipv6Dst: net.IP(netip.Addr(t).AsSlice())}
	m.AddField(*f)
	return nil
}

// ArpSpa matches the ARP sender protocol address.
type ArpSpa netip.Addr

func (a ArpSpa) Text() string { return "arp_spa=" + netip.Addr(a).String() }
func (a ArpSpa) add(m *openflow15.Match) error {
	m.AddField(*openflow15.NewArpSpaField(net.IP(netip.Addr(a).AsSlice())))
	return nil
}
