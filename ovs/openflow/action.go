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
	of() (openflow15.Action, error)
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
func (o Output) of() (openflow15.Action, error) { return openflow15.NewActionOutput(uint32(o)), nil }

// ToGroup sends the packet to a group.
type ToGroup uint32

func (g ToGroup) Text() string                   { return fmt.Sprintf("group:%d", uint32(g)) }
func (g ToGroup) of() (openflow15.Action, error) { return openflow15.NewActionGroup(uint32(g)), nil }

// Resubmit runs the packet through a table and comes back.
type Resubmit uint8

func (r Resubmit) Text() string { return fmt.Sprintf("resubmit(,%d)", uint8(r)) }
func (r Resubmit) of() (openflow15.Action, error) {
	return openflow15.NewNXActionResubmitTableAction(openflow15.OFPP_IN_PORT, uint8(r)), nil
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
func (l LoadReg) of() (openflow15.Action, error) {
	mask := l.Mask
	if mask == 0xffffffff {
		mask = 0
	}
	return openflow15.NewActionSetField(*openflow15.NewRegMatchFieldWithMask(l.Index, l.Value, mask)), nil
}

// LoadXXReg sets a 128-bit register.
type LoadXXReg struct {
	Index int
	Value [16]byte
}

func (l LoadXXReg) Text() string { return fmt.Sprintf("set_field:0x%x->xxreg%d", l.Value[:], l.Index) }
func (l LoadXXReg) of() (openflow15.Action, error) {
	f, err := openflow15.FindFieldHeaderByName(fmt.Sprintf("NXM_NX_XXREG%d", l.Index), false)
	if err != nil {
		return nil, err
	}
	v := l.Value
	f.Value = &openflow15.ByteArrayField{Data: v[:], Length: 16}
	return openflow15.NewActionSetField(*f), nil
}

// SetEthSrc and SetEthDst rewrite MAC addresses.
type SetEthSrc net.HardwareAddr
type SetEthDst net.HardwareAddr

func (s SetEthSrc) Text() string { return "set_field:" + net.HardwareAddr(s).String() + "->eth_src" }
func (s SetEthSrc) of() (openflow15.Action, error) {
	return openflow15.NewActionSetField(*openflow15.NewEthSrcField(net.HardwareAddr(s), nil)), nil
}
func (s SetEthDst) Text() string { return "set_field:" + net.HardwareAddr(s).String() + "->eth_dst" }
func (s SetEthDst) of() (openflow15.Action, error) {
	return openflow15.NewActionSetField(*openflow15.NewEthDstField(net.HardwareAddr(s), nil)), nil
}

// SetArpOp, SetArpSha and SetArpSpa rewrite ARP fields (ARP responder).
type SetArpOp uint16
type SetArpSha net.HardwareAddr
type SetArpSpa netip.Addr

func (s SetArpOp) Text() string { return fmt.Sprintf("set_field:%d->arp_op", uint16(s)) }
func (s SetArpOp) of() (openflow15.Action, error) {
	return openflow15.NewActionSetField(*openflow15.NewArpOperField(uint16(s))), nil
}
func (s SetArpSha) Text() string { return "set_field:" + net.HardwareAddr(s).String() + "->arp_sha" }
func (s SetArpSha) of() (openflow15.Action, error) {
	return openflow15.NewActionSetField(*openflow15.NewArpShaField(net.HardwareAddr(s))), nil
}
func (s SetArpSpa) Text() string { return "set_field:" + netip.Addr(s).String() + "->arp_spa" }
func (s SetArpSpa) of() (openflow15.Action, error) {
	return openflow15.NewActionSetField(*openflow15.NewArpSpaField(net.IP(netip.Addr(s).AsSlice()))), nil
}

// Move copies one whole field into another of the same width.
type Move struct {
	Src, Dst string // NXM/OXM names, e.g. "NXM_OF_ETH_SRC"
	Bits     uint16
}

func (m Move) Text() string { return fmt.Sprintf("move:%s[]->%s[]", m.Src, m.Dst) }
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
	IP   netip.Addr
	Port uint16 // 0: keep the port
}

func (n *NAT) text() string {
	if n.Kind == "" {
		return "nat"
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

func (n *NAT) of() (openflow15.Action, error) {
	a := openflow15.NewNXActionCTNAT()
	switch n.Kind {
	case "":
		return a, nil
	case "src":
		if err := a.SetSNAT(); err != nil {
			return nil, err
		}
	case "dst":
		if err := a.SetDNAT(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("nat kind %q", n.Kind)
	}
	ip := net.IP(n.IP.AsSlice())
	if n.IP.Is4() {
		a.SetRangeIPv4Min(ip)
		a.SetRangeIPv4Max(ip)
	} else {
		a.SetRangeIPv6Min(ip)
		a.SetRangeIPv6Max(ip)
	}
	if n.Port != 0 {
		lo, hi := n.Port, n.Port
		a.SetRangeProtoMin(&lo)
		a.SetRangeProtoMax(&hi)
	}
	return a, nil
}

// CT sends the packet through conntrack.
type CT struct {
	Commit bool
	Zone   uint16
	Table  int  // recirculate into this table after conntrack; -1 for none
	NAT    *NAT // optional
	// SetMark, MarkMask: exec(set_field:SetMark/MarkMask->ct_mark) on commit.
	SetMark, MarkMask uint32
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
	if c.MarkMask != 0 {
		parts = append(parts, fmt.Sprintf("exec(set_field:0x%x/0x%x->ct_mark)", c.SetMark, c.MarkMask))
	}
	return "ct(" + strings.Join(parts, ",") + ")"
}

func (c CT) of() (openflow15.Action, error) {
	a := openflow15.NewNXActionConnTrack()
	if c.Commit {
		a.Commit()
	}
	if c.Table >= 0 {
		a.Table(uint8(c.Table))
	}
	a.ZoneImm(c.Zone)
	if c.NAT != nil {
		n, err := c.NAT.of()
		if err != nil {
			return nil, err
		}
		a.AddAction(n)
	}
	if c.MarkMask != 0 {
		mask := c.MarkMask
		a.AddAction(openflow15.NewActionSetField(*openflow15.NewCTMarkMatchField(c.SetMark, &mask)))
	}
	return a, nil
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

// OutputReg outputs to the port held in a 32-bit register.
type OutputReg int

func (o OutputReg) Text() string { return fmt.Sprintf("output:NXM_NX_REG%d[]", int(o)) }
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
func (s SetTunDst) of() (openflow15.Action, error) {
	ip := netip.Addr(s)
	if ip.Is4() {
		return openflow15.NewActionSetField(*openflow15.NewTunnelIpv4DstField(net.IP(ip.AsSlice()), nil)), nil
	}
	return openflow15.NewActionSetField(*openflow15.NewTunnelIpv6DstField(net.IP(ip.AsSlice()), nil)), nil
}
