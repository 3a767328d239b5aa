package openflow

// libOpenflow's form of every field, action and message the driver
// encodes itself (wire.go): the reference the wire tests hold the
// encoding to, byte for byte.

import (
	"fmt"
	"net"
	"net/netip"

	"antrea.io/libOpenflow/openflow15"
	"antrea.io/ofnet/ofctrl"
)

// libMatch and libAction are what every field and action has here.
type (
	libMatch  interface{ add(*openflow15.Match) error }
	libAction interface {
		of() (openflow15.Action, error)
	}
)

func (p InPort) add(m *openflow15.Match) error {
	m.AddField(*openflow15.NewInPortField(uint32(p)))
	return nil
}

func (e EthType) add(m *openflow15.Match) error {
	m.AddField(*openflow15.NewEthTypeField(uint16(e)))
	return nil
}

func (p IPProto) add(m *openflow15.Match) error {
	m.AddField(*openflow15.NewIpProtoField(uint8(p)))
	return nil
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

func (c CtMark) add(m *openflow15.Match) error {
	mask := c.Mask
	m.AddField(*openflow15.NewCTMarkMatchField(c.Value, &mask))
	return nil
}

func (r Reg) add(m *openflow15.Match) error {
	mask := r.Mask
	if mask == 0xffffffff {
		mask = 0
	}
	m.AddField(*openflow15.NewRegMatchFieldWithMask(r.Index, r.Value, mask))
	return nil
}

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

func (a ArpOp) add(m *openflow15.Match) error {
	m.AddField(*openflow15.NewArpOperField(uint16(a)))
	return nil
}

func (a ArpTpa) add(m *openflow15.Match) error {
	m.AddField(*openflow15.NewArpTpaField(net.IP(netip.Addr(a).AsSlice())))
	return nil
}

func (t ICMPv6Type) add(m *openflow15.Match) error {
	f, err := openflow15.FindFieldHeaderByName("OXM_OF_ICMPV6_TYPE", false)
	if err != nil {
		return err
	}
	f.Value = &openflow15.IcmpTypeField{Type: uint8(t)}
	m.AddField(*f)
	return nil
}

func (t NDTarget) add(m *openflow15.Match) error {
	f, err := openflow15.FindFieldHeaderByName("OXM_OF_IPV6_ND_TARGET", false)
	if err != nil {
		return err
	}
	f.Value = &openflow15.Ipv6DstField{Ipv6Dst: net.IP(netip.Addr(t).AsSlice())}
	m.AddField(*f)
	return nil
}

func (a ArpSpa) add(m *openflow15.Match) error {
	m.AddField(*openflow15.NewArpSpaField(net.IP(netip.Addr(a).AsSlice())))
	return nil
}

func (o Output) of() (openflow15.Action, error) { return openflow15.NewActionOutput(uint32(o)), nil }

func (g ToGroup) of() (openflow15.Action, error) { return openflow15.NewActionGroup(uint32(g)), nil }

func (r Resubmit) of() (openflow15.Action, error) {
	return openflow15.NewNXActionResubmitTableAction(openflow15.OFPP_IN_PORT, uint8(r)), nil
}

func (l LoadReg) of() (openflow15.Action, error) {
	mask := l.Mask
	if mask == 0xffffffff {
		mask = 0
	}
	return openflow15.NewActionSetField(*openflow15.NewRegMatchFieldWithMask(l.Index, l.Value, mask)), nil
}

func (l LoadXXReg) of() (openflow15.Action, error) {
	f, err := openflow15.FindFieldHeaderByName(fmt.Sprintf("NXM_NX_XXREG%d", l.Index), false)
	if err != nil {
		return nil, err
	}
	v := l.Value
	f.Value = &openflow15.ByteArrayField{Data: v[:], Length: 16}
	return openflow15.NewActionSetField(*f), nil
}

func (s SetEthSrc) of() (openflow15.Action, error) {
	return openflow15.NewActionSetField(*openflow15.NewEthSrcField(net.HardwareAddr(s), nil)), nil
}

func (s SetEthDst) of() (openflow15.Action, error) {
	return openflow15.NewActionSetField(*openflow15.NewEthDstField(net.HardwareAddr(s), nil)), nil
}

func (s SetArpOp) of() (openflow15.Action, error) {
	return openflow15.NewActionSetField(*openflow15.NewArpOperField(uint16(s))), nil
}

func (s SetArpSha) of() (openflow15.Action, error) {
	return openflow15.NewActionSetField(*openflow15.NewArpShaField(net.HardwareAddr(s))), nil
}

func (s SetArpSpa) of() (openflow15.Action, error) {
	return openflow15.NewActionSetField(*openflow15.NewArpSpaField(net.IP(netip.Addr(s).AsSlice()))), nil
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

func (s SetTunDst) of() (openflow15.Action, error) {
	ip := netip.Addr(s)
	if ip.Is4() {
		return openflow15.NewActionSetField(*openflow15.NewTunnelIpv4DstField(net.IP(ip.AsSlice()), nil)), nil
	}
	return openflow15.NewActionSetField(*openflow15.NewTunnelIpv6DstField(net.IP(ip.AsSlice()), nil)), nil
}

func (f *Flow) FlowMod() (*openflow15.FlowMod, error) {
	fm := openflow15.NewFlowMod()
	fm.Command = openflow15.FC_ADD
	fm.TableId = f.Table
	fm.Priority = f.Priority
	fm.Cookie = f.Cookie()
	for _, m := range f.matches() {
		if err := m.(libMatch).add(&fm.Match); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Text(), err)
		}
	}
	if len(f.Actions) > 0 {
		ia := openflow15.NewInstrApplyActions()
		for _, a := range f.Actions {
			oa, err := a.(libAction).of()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", a.Text(), err)
			}
			if oa != nil {
				if err := ia.AddAction(oa, false); err != nil {
					return nil, err
				}
			}
		}
		if len(ia.Actions) > 0 {
			fm.AddInstruction(ia)
		}
	}
	if f.Goto >= 0 {
		fm.AddInstruction(openflow15.NewInstrGotoTable(uint8(f.Goto)))
	}
	return fm, nil
}

func DeleteByCookie(cookie, mask uint64) *openflow15.FlowMod {
	fm := openflow15.NewFlowMod()
	fm.Command = openflow15.FC_DELETE
	fm.TableId = openflow15.OFPTT_ALL
	fm.Cookie = cookie
	fm.CookieMask = mask
	return fm
}

func (h HashField) mask() (*openflow15.MatchField, error) {
	ones4 := net.IPv4bcast.To4()
	ones6 := net.IP(bytes16(0xff))
	switch h {
	case HashIPSrc:
		return openflow15.NewIpv4SrcField(ones4, nil), nil
	case HashIPDst:
		return openflow15.NewIpv4DstField(ones4, nil), nil
	case HashIPv6Src:
		return openflow15.NewIpv6SrcField(ones6, nil), nil
	case HashIPv6Dst:
		return openflow15.NewIpv6DstField(ones6, nil), nil
	case HashTCPSrc:
		return openflow15.NewTcpSrcField(0xffff), nil
	case HashTCPDst:
		return openflow15.NewTcpDstField(0xffff), nil
	case HashUDPSrc:
		return openflow15.NewUdpSrcField(0xffff), nil
	case HashUDPDst:
		return openflow15.NewUdpDstField(0xffff), nil
	case HashSCTPSrc:
		return openflow15.NewSctpSrcField(0xffff), nil
	case HashSCTPDst:
		return openflow15.NewSctpDstField(0xffff), nil
	}
	return nil, fmt.Errorf("unknown hash field %q", h)
}

func bytes16(v byte) []byte {
	b := make([]byte, 16)
	for i := range b {
		b[i] = v
	}
	return b
}

func (g *Group) GroupMessage(command int) (*ofctrl.GroupBundleMessage, error) {
	og := ofctrl.NewGroup(g.ID, ofctrl.GroupSelect, nil)
	if command != openflow15.OFPGC_DELETE && len(g.HashFields) > 0 {
		var fields []openflow15.MatchField
		for _, f := range g.HashFields {
			mf, err := f.mask()
			if err != nil {
				return nil, err
			}
			fields = append(fields, *mf)
		}
		og.AddProperty(openflow15.NewNTRSelectionMethod(openflow15.NTR_HASH, 0, fields...))
	}
	if command != openflow15.OFPGC_DELETE {
		for i, id := range g.BucketIDs() {
			b := openflow15.NewBucket(id)
			for _, a := range g.Buckets.Bucket(i) {
				oa, err := a.(libAction).of()
				if err != nil {
					return nil, fmt.Errorf("group %d: %s: %w", g.ID, a.Text(), err)
				}
				b.AddAction(oa)
			}
			b.AddProperty(openflow15.NewGroupBucketPropWeight(g.weight(i)))
			og.AddBuckets(b)
		}
	}
	return og.GetBundleMessage(command), nil
}
