package openflow

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"antrea.io/libOpenflow/openflow15"
)

// Action is one action of a flow or bucket.
type Action interface {
	Text() string
	// wire appends the action's OpenFlow encoding.
	wire(b []byte) ([]byte, error)
}

// Output sends the packet to a port.
type Output uint32

// Special ports.
const (
	PortInPort Output = Output(openflow15.P_IN_PORT)
	PortNormal Output = Output(openflow15.P_NORMAL)
	PortLocal  Output = Output(openflow15.P_LOCAL)
)

func (o Output) Text() string {
	switch o {
	case PortInPort:
		return "IN_PORT"
	case PortNormal:
		return "NORMAL"
	case PortLocal:
		return "LOCAL"
	}
	return fmt.Sprintf("output:%d", uint32(o))
}
func (o Output) wire(b []byte) ([]byte, error) {
	b = be16(b, openflow15.ActionType_Output)
	b = be16(b, 16)
	b = be32(b, uint32(o))
	b = be16(b, openflow15.OFPCML_NO_BUFFER)
	return append(b, 0, 0, 0, 0, 0, 0), nil
}

// ToGroup sends the packet to a group.
type ToGroup uint32

func (g ToGroup) Text() string { return fmt.Sprintf("group:%d", uint32(g)) }
func (g ToGroup) wire(b []byte) ([]byte, error) {
	return be32(be16(be16(b, openflow15.ActionType_Group), 8), uint32(g)), nil
}

// Resubmit runs the packet through a table and comes back.
type Resubmit uint8

func (r Resubmit) Text() string { return fmt.Sprintf("resubmit(,%d)", uint8(r)) }
func (r Resubmit) wire(b []byte) ([]byte, error) {
	b, start := nxAction(b, openflow15.NXAST_RESUBMIT_TABLE)
	b = be16(b, uint16(openflow15.OFPP_IN_PORT))
	b = append(b, uint8(r), 0, 0, 0)
	return endAction(b, start), nil
}

// LoadReg sets the bits of a 32-bit register under a mask (Value shifted).
type LoadReg struct {
	Index       int
	Value, Mask uint32
}

func (l LoadReg) Text() string {
	if l.Mask == 0xffffffff {
		return fmt.Sprintf("set_field:0x%x->reg%d", l.Value, l.Index)
	}
	return fmt.Sprintf("set_field:0x%x/0x%x->reg%d", l.Value, l.Mask, l.Index)
}
func (l LoadReg) wire(b []byte) ([]byte, error) {
	return appendSetField(b, func(b []byte) []byte {
		if l.Mask == 0xffffffff {
			return appendOXM32(b, fieldRegs[l.Index], l.Value)
		}
		return appendOXM32Masked(b, fieldRegs[l.Index], l.Value, l.Mask)
	}), nil
}

// LoadXXReg sets a 128-bit register.
type LoadXXReg struct {
	Index int
	Value [16]byte
}

func (l LoadXXReg) Text() string { return fmt.Sprintf("set_field:0x%x->xxreg%d", l.Value[:], l.Index) }
func (l LoadXXReg) wire(b []byte) ([]byte, error) {
	return appendSetField(b, func(b []byte) []byte { return appendOXM(b, fieldXXRegs[l.Index], l.Value[:], nil) }), nil
}

// SetEthSrc and SetEthDst rewrite MAC addresses.
type SetEthSrc net.HardwareAddr
type SetEthDst net.HardwareAddr

func (s SetEthSrc) Text() string { return "set_field:" + net.HardwareAddr(s).String() + "->eth_src" }
func (s SetEthSrc) wire(b []byte) ([]byte, error) {
	return appendSetField(b, func(b []byte) []byte { return appendOXM(b, fieldEthSrc, s, nil) }), nil
}
func (s SetEthDst) wire(b []byte) ([]byte, error) {
	return appendSetField(b, func(b []byte) []byte { return appendOXM(b, fieldEthDst, s, nil) }), nil
}
func (s SetEthDst) Text() string { return "set_field:" + net.HardwareAddr(s).String() + "->eth_dst" }

// SetArpOp, SetArpSha and SetArpSpa rewrite ARP fields (ARP responder).
type SetArpOp uint16
type SetArpSha net.HardwareAddr
type SetArpSpa netip.Addr

func (s SetArpOp) Text() string { return fmt.Sprintf("set_field:%d->arp_op", uint16(s)) }
func (s SetArpOp) wire(b []byte) ([]byte, error) {
	return appendSetField(b, func(b []byte) []byte { return appendOXM(b, fieldArpOp, be16(nil, uint16(s)), nil) }), nil
}
func (s SetArpSha) wire(b []byte) ([]byte, error) {
	return appendSetField(b, func(b []byte) []byte { return appendOXM(b, fieldArpSha, s, nil) }), nil
}
func (s SetArpSpa) wire(b []byte) ([]byte, error) {
	return appendSetField(b, func(b []byte) []byte { return appendOXMAddr(b, fieldArpSpa, netip.Addr(s)) }), nil
}
func (s SetArpSha) Text() string { return "set_field:" + net.HardwareAddr(s).String() + "->arp_sha" }
func (s SetArpSpa) Text() string { return "set_field:" + netip.Addr(s).String() + "->arp_spa" }

// Move copies one whole field into another of the same width.
type Move struct {
	Src, Dst string // NXM/OXM names, e.g. "NXM_OF_ETH_SRC"
	Bits     uint16
}

// Text names the bits moved as ovs-ofctl reads them: a field moved whole
// as NAME[], part of one from bit 0 as NAME[0..Bits-1].
func (m Move) Text() string {
	return fmt.Sprintf("move:%s->%s", bitRange(m.Src, m.Bits), bitRange(m.Dst, m.Bits))
}

func bitRange(field string, bits uint16) string {
	if h, err := openflow15.FindFieldHeaderByName(field, false); err == nil && uint16(h.Length)*8 > bits {
		return fmt.Sprintf("%s[0..%d]", field, bits-1)
	}
	return field + "[]"
}
func (m Move) wire(b []byte) ([]byte, error) { return viaLibOpenflow(b, m) }
func (m Move) of() (openflow15.Action, error) {
	src, err := openflow15.FindFieldHeaderByName(m.Src, false)
	if err != nil {
		return nil, err
	}
	dst, err := openflow15.FindFieldHeaderByName(m.Dst, false)
	if err != nil {
		return nil, err
	}
	// OVS accepts only the standard copy_field in OpenFlow 1.5, not the
	// Nicira reg_move it replaced.
	return openflow15.NewActionCopyField(m.Bits, 0, 0,
		*openflow15.NewOxmId(src.Class, src.Field, false, src.Length, 0),
		*openflow15.NewOxmId(dst.Class, dst.Field, false, dst.Length, 0)), nil
}

// NAT is the nat() part of a ct action.
type NAT struct {
	// Kind is "" (reverse existing NAT only), "src" or "dst".
	Kind string
	// IP is the address to translate to. A "src" NAT without one keeps
	// the connection's addresses and changes its source port only when
	// its reply tuple is taken (OVS's SNAT to all-zero; on the wire: no
	// range at all, which is how OVS itself encodes it).
	IP   netip.Addr
	Port uint16 // 0: keep the port
}

func (n *NAT) text() string {
	if n.Kind == "" {
		return "nat"
	}
	if !n.IP.IsValid() {
		return fmt.Sprintf("nat(%s)", n.Kind)
	}
	addr := n.IP.String()
	if n.Port != 0 {
		if n.IP.Is6() {
			addr = "[" + addr + "]"
		}
		addr += fmt.Sprintf(":%d", n.Port)
	}
	return fmt.Sprintf("nat(%s=%s)", n.Kind, addr)
}

// wire appends the nat action (NXAST_NAT): flags, which range parts
// follow, the address range (one address) and the port range (one port).
func (n *NAT) wire(b []byte) ([]byte, error) {
	b, start := nxAction(b, openflow15.NXAST_NAT)
	b = be16(b, 0) // pad
	var flags, present uint16
	switch n.Kind {
	case "":
	case "src":
		flags = openflow15.NX_NAT_F_SRC
	case "dst":
		flags = openflow15.NX_NAT_F_DST
	default:
		return nil, fmt.Errorf("nat kind %q", n.Kind)
	}
	ranged := n.Kind != "" && n.IP.IsValid()
	if ranged {
		if n.IP.Is4() {
			present = openflow15.NX_NAT_RANGE_IPV4_MIN | openflow15.NX_NAT_RANGE_IPV4_MAX
		} else {
			present = openflow15.NX_NAT_RANGE_IPV6_MIN | openflow15.NX_NAT_RANGE_IPV6_MAX
		}
		if n.Port != 0 {
			present |= openflow15.NX_NAT_RANGE_PROTO_MIN | openflow15.NX_NAT_RANGE_PROTO_MAX
		}
	}
	b = be16(b, flags)
	b = be16(b, present)
	if ranged {
		ip := n.IP.AsSlice()
		b = append(append(b, ip...), ip...)
		if n.Port != 0 {
			b = be16(be16(b, n.Port), n.Port)
		}
	}
	return endAction(pad8(b, start), start), nil
}

// CT sends the packet through conntrack.
type CT struct {
	Commit bool
	Zone   uint16
	Table  int  // recirculate into this table after conntrack; -1 for none
	NAT    *NAT // optional
	// SetMark, MarkMask: exec(set_field:SetMark/MarkMask->ct_mark) on commit.
	SetMark, MarkMask uint32
	// Label, when valid: exec(set_field:Label->ct_label) on commit (an
	// IPv4 address in bits 0..31, an IPv6 one whole: see labelOf).
	Label netip.Addr
}

func (c CT) Text() string {
	var parts []string
	if c.Commit {
		parts = append(parts, "commit")
	}
	if c.Table >= 0 {
		parts = append(parts, fmt.Sprintf("table=%d", c.Table))
	}
	parts = append(parts, fmt.Sprintf("zone=%d", c.Zone))
	if c.NAT != nil {
		parts = append(parts, c.NAT.text())
	}
	var exec []string
	if c.MarkMask != 0 {
		exec = append(exec, fmt.Sprintf("set_field:0x%x/0x%x->ct_mark", c.SetMark, c.MarkMask))
	}
	if c.Label.IsValid() {
		l := labelOf(c.Label)
		exec = append(exec, fmt.Sprintf("set_field:0x%x->ct_label", l[:]))
	}
	if len(exec) > 0 {
		parts = append(parts, "exec("+strings.Join(exec, ",")+")")
	}
	return "ct(" + strings.Join(parts, ",") + ")"
}

// wire appends the ct action (NXAST_CT) with its nested nat and
// set_field actions.
func (c CT) wire(b []byte) ([]byte, error) {
	b, start := nxAction(b, openflow15.NXAST_CT)
	var flags uint16
	if c.Commit {
		flags |= openflow15.NX_CT_F_COMMIT
	}
	table := uint8(openflow15.NX_CT_RECIRC_NONE)
	if c.Table >= 0 {
		table = uint8(c.Table)
	}
	b = be16(b, flags)
	b = be32(b, 0)      // zone from an immediate
	b = be16(b, c.Zone) // the zone
	b = append(b, table, 0, 0, 0)
	b = be16(b, 0) // alg
	if c.NAT != nil {
		var err error
		if b, err = c.NAT.wire(b); err != nil {
			return nil, err
		}
	}
	if c.MarkMask != 0 {
		b = appendSetField(b, func(b []byte) []byte { return appendOXM32Masked(b, fieldCtMark, c.SetMark, c.MarkMask) })
	}
	if c.Label.IsValid() {
		l := labelOf(c.Label)
		b = appendSetField(b, func(b []byte) []byte { return appendOXM(b, fieldCtLabel, l[:], nil) })
	}
	return endAction(b, start), nil
}

// Controller sends the packet to the controller with userdata.
type Controller struct {
	ID       uint16
	UserData []byte
}

func (c Controller) Text() string {
	return fmt.Sprintf("controller(userdata=%s,id=%d)", dotted(c.UserData), c.ID)
}

func dotted(b []byte) string {
	h := hex.EncodeToString(b)
	var parts []string
	for i := 0; i < len(h); i += 2 {
		parts = append(parts, h[i:i+2])
	}
	return strings.Join(parts, ".")
}

func (c Controller) wire(b []byte) ([]byte, error) { return viaLibOpenflow(b, c) }
func (c Controller) of() (openflow15.Action, error) {
	a := openflow15.NewNXActionController2()
	a.AddControllerID(c.ID)
	a.AddMaxLen(0xffff)
	a.AddReason(openflow15.R_APPLY_ACTION)
	a.AddUserdata(c.UserData)
	return a, nil
}

// Drop, written as an empty action list.
type dropAction struct{}

func (dropAction) Text() string                   { return "drop" }
func (dropAction) of() (openflow15.Action, error) { return nil, nil }
func (dropAction) wire(b []byte) ([]byte, error)  { return b, nil }

// OutputReg outputs to the port held in a 32-bit register.
type OutputReg int

func (o OutputReg) Text() string                  { return fmt.Sprintf("output:NXM_NX_REG%d[]", int(o)) }
func (o OutputReg) wire(b []byte) ([]byte, error) { return viaLibOpenflow(b, o) }
func (o OutputReg) of() (openflow15.Action, error) {
	return openflow15.NewOutputFromField(openflow15.NewRegMatchField(int(o), 0, nil), 31), nil
}

// SetTunDst sets the remote end of a flow-based tunnel port (remote_ip=flow).
type SetTunDst netip.Addr

func (s SetTunDst) Text() string {
	ip := netip.Addr(s)
	if ip.Is4() {
		return "set_field:" + ip.String() + "->tun_dst"
	}
	return "set_field:" + ip.String() + "->tun_ipv6_dst"
}
func (s SetTunDst) wire(b []byte) ([]byte, error) {
	ip := netip.Addr(s)
	f := fieldTunDst
	if ip.Is6() {
		f = fieldTunIPv6
	}
	return appendSetField(b, func(b []byte) []byte { return appendOXMAddr(b, f, ip) }), nil
}

// DecTTL decrements an IP packet's TTL (IPv6: hop limit), dropping it at
// zero: what a router does. OVS takes it only in a flow whose match
// makes the packet IP (OFPBAC_MATCH_INCONSISTENT otherwise).
type DecTTL struct{}

func (DecTTL) Text() string                    { return "dec_ttl" }
func (d DecTTL) wire(b []byte) ([]byte, error) { return viaLibOpenflow(b, d) }
func (DecTTL) of() (openflow15.Action, error)  { return openflow15.NewActionDecNwTtl(), nil }
