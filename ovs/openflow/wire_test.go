package openflow

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"antrea.io/libOpenflow/openflow15"
)

// The driver's own encoding must be libOpenflow's, byte for byte, for
// every field, action and message it sends.

var (
	v4   = netip.MustParseAddr("10.96.0.10")
	v6   = netip.MustParseAddr("fd00:10:96::a")
	mac  = net.HardwareAddr{0x02, 0x53, 0x59, 0x00, 0x00, 0x01}
	nats = []*NAT{{}, {Kind: "dst", IP: v4}, {Kind: "dst", IP: v4, Port: 8080}, {Kind: "src", IP: v6, Port: 1}, {Kind: "dst", IP: v6}}
)

var wireMatches = map[string]Match{
	"in_port":          InPort(7),
	"eth_type":         EthIPv6,
	"ip_proto":         ProtoSCTP,
	"nw_src host":      IPSrc(netip.PrefixFrom(v4, 32)),
	"nw_src prefix":    IPSrc(netip.MustParsePrefix("192.168.0.0/16")),
	"nw_dst host":      IPDst(netip.PrefixFrom(v4, 32)),
	"ipv6_dst prefix":  IPDst(netip.MustParsePrefix("fd00:10:96::/64")),
	"ipv6_src host":    IPSrc(netip.PrefixFrom(v6, 128)),
	"tcp_dst":          L4Dst{Proto: ProtoTCP, Port: 80},
	"udp_dst":          L4Dst{Proto: ProtoUDP, Port: 53},
	"sctp_dst":         L4Dst{Proto: ProtoSCTP, Port: 9},
	"ct_state":         CtState{Set: CtTrk | CtNew, Unset: CtInv | CtRpl},
	"ct_state all":     CtState{Set: CtEst | CtRel, Unset: CtNew | CtTrk},
	"ct_mark":          CtMark{Value: 0x10, Mask: 0x30},
	"reg exact":        Reg{Index: 3, Value: 0x0a000001, Mask: 0xffffffff},
	"reg masked":       Reg{Index: 15, Value: 0x20000, Mask: 0x70000},
	"xxreg":            XXReg{Index: 3, Value: v6.As16()},
	"arp_op":           ArpOp(1),
	"arp_tpa":          ArpTpa(v4),
	"arp_spa":          ArpSpa(v4),
	"icmpv6_type":      ICMPv6Type(135),
	"nd_target":        NDTarget(v6),
	"reg0 zero masked": Reg{Index: 0, Value: 0, Mask: 1},
}

func wireActions() map[string]Action {
	acts := map[string]Action{
		"output":         Output(3),
		"output in_port": PortInPort,
		"output local":   PortLocal,
		"group":          ToGroup(0x80000001),
		"resubmit":       Resubmit(40),
		"load reg":       LoadReg{Index: 4, Value: 0x10000, Mask: 0x70000},
		"load reg exact": LoadReg{Index: 3, Value: 0x0a000001, Mask: 0xffffffff},
		"load xxreg":     LoadXXReg{Index: 3, Value: v6.As16()},
		"eth_src":        SetEthSrc(mac),
		"eth_dst":        SetEthDst(mac),
		"arp_op":         SetArpOp(2),
		"arp_sha":        SetArpSha(mac),
		"arp_spa":        SetArpSpa(v4),
		"move":           Move{Src: "NXM_OF_ETH_SRC", Dst: "NXM_OF_ETH_DST", Bits: 48},
		"controller":     Controller{ID: 0x5359, UserData: []byte{1, 2}},
		"output reg":     OutputReg(1),
		"tun_dst":        SetTunDst(v4),
		"tun_ipv6_dst":   SetTunDst(v6),
		"ct bare":        CT{Zone: 65000, Table: -1},
		"ct mark":        CT{Commit: true, Zone: 1, Table: 30, SetMark: 0x10, MarkMask: 0x10},
		"learn": Learn{Table: 40, Priority: 200, IdleTimeout: 10800, DeleteLearned: true, Cookie: CookieTag | CookieKindLearn | 5,
			Specs: []LearnSpec{
				{Field: "NXM_OF_ETH_TYPE", TextName: "eth_type", Bits: 16, Value: 0x800},
				{Field: "NXM_OF_IP_SRC", Bits: 32, From: "NXM_OF_IP_SRC"},
				{Load: true, Field: "NXM_NX_REG4", Start: 16, Bits: 3, Value: 2},
				{Load: true, Field: "NXM_NX_REG0", Start: 3, Bits: 1, From: "NXM_NX_REG0", FromStart: 3},
			}},
	}
	for i, n := range nats {
		acts["ct nat "+n.text()+string(rune('a'+i))] = CT{Commit: true, Zone: 7, Table: 70, NAT: n, SetMark: 1, MarkMask: 3}
	}
	return acts
}

func TestWireMatchesLibOpenflow(t *testing.T) {
	for name, m := range wireMatches {
		var lib openflow15.Match
		if err := m.(libMatch).add(&lib); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want []byte
		for _, f := range lib.Fields {
			b, err := f.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, b...)
		}
		if got := m.wire(nil); !bytes.Equal(got, want) {
			t.Errorf("%s (%s):\n got %x\nwant %x", name, m.Text(), got, want)
		}
	}
}

func TestWireActionsLibOpenflow(t *testing.T) {
	for name, a := range wireActions() {
		oa, err := a.(libAction).of()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := oa.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.wire(nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s (%s):\n got %x\nwant %x", name, a.Text(), got, want)
		}
	}
}

// TestWireMessagesLibOpenflow: whole flow and group messages, as a bundle
// carries them.
func TestWireMessagesLibOpenflow(t *testing.T) {
	acts := wireActions()
	var all []Action
	for _, a := range acts {
		all = append(all, a)
	}
	var ms []Match
	for _, m := range wireMatches {
		ms = append(ms, m)
	}
	flows := []*Flow{
		{Table: 0, Priority: 0, Goto: 10},
		{Table: 10, Priority: 200, Match: ms[:5], Actions: []Action{acts["load reg"], acts["group"]}, Goto: -1},
		{Table: 20, Priority: 65535, Match: ms, Actions: all, Goto: 30},
		{Table: 30, Priority: 1, Match: []Match{Reg{Index: 4, Value: 1, Mask: 1}, Reg{Index: 4, Value: 0x20, Mask: 0x30}}, Goto: -1},
		{Table: 40, Priority: 5, Actions: []Action{dropAction{}}, Goto: -1},
	}
	for i, f := range flows {
		fm, err := f.FlowMod()
		if err != nil {
			t.Fatal(err)
		}
		fm.Xid = 77
		want, err := fm.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.AppendFlowAdd(nil, 77)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("flow %d (%s):\n got %x\nwant %x", i, f.Text(), got, want)
		}
	}

	del := DeleteByCookie(CookieTag, CookieTagMask)
	del.Xid = 9
	want, _ := del.MarshalBinary()
	if got := AppendFlowDelete(nil, CookieTag, CookieTagMask, 9); !bytes.Equal(got, want) {
		t.Errorf("delete by cookie:\n got %x\nwant %x", got, want)
	}

	groups := []*Group{
		{ID: 0x80000001, Buckets: BucketList{{CT{Commit: true, Zone: 7, Table: 70, NAT: nats[2], SetMark: 1, MarkMask: 3}}, {acts["load reg"], acts["resubmit"]}}},
		{ID: 0x80000002, HashFields: []HashField{HashIPSrc, HashIPDst, HashTCPSrc, HashTCPDst}, Buckets: BucketList{{CT{Zone: 7, Table: -1, NAT: nats[0]}}}},
		{ID: 0x80000003, HashFields: []HashField{HashIPv6Src, HashIPv6Dst, HashSCTPSrc, HashSCTPDst}},
		{ID: 0x80000004, HashFields: []HashField{HashUDPSrc, HashUDPDst}, Buckets: BucketList{{acts["load xxreg"]}, {acts["output"]}, {acts["tun_dst"]}}},
		{ID: 0x80000005, HashFields: []HashField{HashIPSrc, HashIPDst, HashTCPSrc, HashTCPDst},
			Buckets: weightedList{BucketList{{ToGroup(0x80000006)}, {ToGroup(0x80000007)}}, []uint16{50012, 49988}}},
	}
	for _, g := range groups {
		for _, cmd := range []int{openflow15.OFPGC_ADD, openflow15.OFPGC_MODIFY, openflow15.OFPGC_DELETE} {
			msg, err := g.GroupMessage(cmd)
			if err != nil {
				t.Fatal(err)
			}
			gm := msg.GetMessage().(*openflow15.GroupMod)
			gm.Xid = 5
			want, err := gm.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			got, err := g.AppendGroupMod(nil, uint16(cmd), 5)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("group %x command %d:\n got %x\nwant %x", g.ID, cmd, got, want)
			}
		}
	}
}

// weightedList is a BucketList with a weight per bucket.
type weightedList struct {
	BucketList
	weights []uint16
}

func (w weightedList) Weight(i int) uint16 { return w.weights[i] }
