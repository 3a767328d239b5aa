//go:build linux

package ofconn

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"antrea.io/ofnet/ofctrl"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

type nopHandler struct{ connected chan struct{} }

func (h *nopHandler) Connected(int) {
	select {
	case h.connected <- struct{}{}:
	default:
	}
}
func (h *nopHandler) PacketIn(*ofctrl.PacketIn) {}

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

func xx(s string) [16]byte { return ip(s).As16() }

// sample covers every match field and action kind the pipeline uses.
func sample() ([]*of.Flow, []*of.Group) {
	mac, _ := net.ParseMAC("0a:58:0a:f4:01:01")
	pod, _ := net.ParseMAC("0a:58:0a:f4:01:05")
	groups := []*of.Group{
		{ID: 0x59000001, Buckets: of.BucketList{
			{of.LoadReg{Index: 3, Value: 0x0af40105, Mask: 0xffffffff}, of.LoadReg{Index: 4, Value: 0x20000 | 8080, Mask: 0x7ffff}, of.Resubmit(7)},
			{of.LoadReg{Index: 3, Value: 0x0af40205, Mask: 0xffffffff}, of.LoadReg{Index: 4, Value: 0x20000 | 8080, Mask: 0x7ffff}, of.Resubmit(7)},
		}},
		{ID: 0x59000002, Buckets: of.BucketList{
			{of.LoadXXReg{Index: 3, Value: xx("fd00:244:1::5")}, of.LoadReg{Index: 4, Value: 0x30000 | 80, Mask: 0x7ffff}, of.Resubmit(6)},
		}},
	}
	flows := []*of.Flow{
		{Table: 0, Priority: 200, Match: []of.Match{of.InPort(1), of.EthType(of.EthIPv4)}, Actions: []of.Action{of.LoadReg{Index: 0, Value: 1, Mask: 0xf}}, Goto: 2},
		{Table: 0, Priority: 0, Goto: -1},
		{Table: 1, Priority: 200, Goto: -1,
			Match: []of.Match{of.EthType(of.EthARP), of.ArpOp(1), of.ArpTpa(ip("10.244.1.1"))},
			Actions: []of.Action{of.Move{Src: "NXM_OF_ETH_SRC", Dst: "NXM_OF_ETH_DST", Bits: 48}, of.SetEthSrc(mac), of.SetArpOp(2),
				of.Move{Src: "NXM_NX_ARP_SHA", Dst: "NXM_NX_ARP_THA", Bits: 48}, of.SetArpSha(mac),
				of.Move{Src: "NXM_OF_ARP_SPA", Dst: "NXM_OF_ARP_TPA", Bits: 32}, of.SetArpSpa(ip("10.244.1.1")), of.PortInPort}},
		{Table: 1, Priority: 190, Goto: -1, Match: []of.Match{of.EthType(of.EthIPv6), of.IPProto(of.ProtoICMPv6), of.ICMPv6Type(135), of.NDTarget(ip("fd00:244:1::1"))},
			Actions: []of.Action{of.Controller{ID: ControllerID, UserData: []byte{2}}}},
		{Table: 1, Priority: 0, Actions: []of.Action{of.PortNormal}, Goto: -1},
		{Table: 3, Priority: 200, Match: []of.Match{of.EthType(of.EthIPv4)}, Goto: -1,
			Actions: []of.Action{of.CT{Zone: 0x5359, Table: 4, NAT: &of.NAT{}}}},
		{Table: 4, Priority: 200, Match: []of.Match{of.CtState{Set: of.CtInv | of.CtTrk}}, Goto: -1},
		{Table: 4, Priority: 190, Match: []of.Match{of.CtState{Set: of.CtTrk, Unset: of.CtNew}, of.CtMark{Value: 0x10, Mask: 0x10}}, Goto: 9},
		{Table: 4, Priority: 0, Actions: []of.Action{of.Resubmit(5), of.Resubmit(6)}, Goto: -1},
		{Table: 5, Priority: 0, Actions: []of.Action{of.LoadReg{Index: 4, Value: 0x10000, Mask: 0x70000}}, Goto: -1},
		{Table: 6, Priority: 200, Goto: -1,
			Match:   []of.Match{of.EthType(of.EthIPv4), of.IPProto(of.ProtoTCP), of.IPDst(netip.PrefixFrom(ip("10.96.0.10"), 32)), of.L4Dst{Proto: of.ProtoTCP, Port: 80}, of.Reg{Index: 4, Value: 0x10000, Mask: 0x70000}},
			Actions: []of.Action{of.LoadReg{Index: 4, Value: 0x30000, Mask: 0x70000}, of.ToGroup(0x59000001)}},
		{Table: 6, Priority: 190, Goto: 7,
			Match: []of.Match{of.EthType(of.EthIPv4), of.IPProto(of.ProtoTCP), of.IPDst(netip.PrefixFrom(ip("10.96.0.10"), 32)), of.L4Dst{Proto: of.ProtoTCP, Port: 80}, of.Reg{Index: 4, Value: 0x30000, Mask: 0x70000}},
			Actions: []of.Action{of.Learn{Table: 5, Priority: 200, IdleTimeout: 10800, Cookie: of.CookieTag | of.CookieKindLearn | 7, DeleteLearned: true, Specs: []of.LearnSpec{
				{Field: "NXM_OF_ETH_TYPE", TextName: "eth_type", Bits: 16, Value: 0x800},
				{Field: "NXM_OF_IP_PROTO", TextName: "nw_proto", Bits: 8, Value: 6},
				{Field: "NXM_OF_IP_SRC", Bits: 32, From: "NXM_OF_IP_SRC"},
				{Field: "NXM_OF_IP_DST", Bits: 32, From: "NXM_OF_IP_DST"},
				{Field: "NXM_OF_TCP_DST", Bits: 16, From: "NXM_OF_TCP_DST"},
				{Load: true, Field: "NXM_NX_REG3", Bits: 32, From: "NXM_NX_REG3"},
				{Load: true, Field: "NXM_NX_REG4", Bits: 16, From: "NXM_NX_REG4"},
				{Load: true, Field: "NXM_NX_REG4", Start: 16, Bits: 3, Value: 2},
			}}, of.LoadReg{Index: 4, Value: 0x20000, Mask: 0x70000}}},
		{Table: 6, Priority: 180, Goto: -1,
			Match:   []of.Match{of.EthType(of.EthIPv6), of.IPProto(of.ProtoUDP), of.IPDst(netip.PrefixFrom(ip("fd00:96::a"), 128)), of.L4Dst{Proto: of.ProtoUDP, Port: 53}, of.IPSrc(netip.MustParsePrefix("2001:db8::/32"))},
			Actions: []of.Action{of.ToGroup(0x59000002)}},
		{Table: 6, Priority: 170, Goto: -1,
			Match:   []of.Match{of.EthType(of.EthIPv4), of.IPProto(of.ProtoSCTP), of.IPDst(netip.PrefixFrom(ip("10.96.0.11"), 32)), of.L4Dst{Proto: of.ProtoSCTP, Port: 9999}, of.IPSrc(netip.MustParsePrefix("198.51.100.0/24"))},
			Actions: []of.Action{of.Controller{ID: ControllerID, UserData: []byte{1, 0}}}},
		{Table: 7, Priority: 200, Goto: -1,
			Match:   []of.Match{of.EthType(of.EthIPv4), of.IPProto(of.ProtoTCP), of.Reg{Index: 3, Value: 0x0af40105, Mask: 0xffffffff}, of.Reg{Index: 4, Value: 0x20000 | 8080, Mask: 0x7ffff}},
			Actions: []of.Action{of.CT{Commit: true, Zone: 0x5359, Table: 8, NAT: &of.NAT{Kind: "dst", IP: ip("10.244.1.5"), Port: 8080}, SetMark: 0x10, MarkMask: 0x10}}},
		{Table: 7, Priority: 200, Goto: -1,
			Match:   []of.Match{of.EthType(of.EthIPv6), of.IPProto(of.ProtoTCP), of.XXReg{Index: 3, Value: xx("fd00:244:1::5")}, of.Reg{Index: 4, Value: 0x20000 | 80, Mask: 0x7ffff}},
			Actions: []of.Action{of.CT{Commit: true, Zone: 0x5359, Table: 8, NAT: &of.NAT{Kind: "dst", IP: ip("fd00:244:1::5"), Port: 80}, SetMark: 0x10, MarkMask: 0x10}}},
		{Table: 8, Priority: 200, Goto: -1,
			Match:   []of.Match{of.EthType(of.EthIPv4), of.IPSrc(netip.PrefixFrom(ip("10.244.1.5"), 32)), of.IPDst(netip.PrefixFrom(ip("10.244.1.5"), 32)), of.CtMark{Value: 0x10, Mask: 0x10}},
			Actions: []of.Action{of.CT{Commit: true, Zone: 0x535a, Table: 9, NAT: &of.NAT{Kind: "src", IP: ip("169.254.255.253")}}}},
		{Table: 10, Priority: 200, Goto: 11, // nat(src) without an address: a new source port on a clash only
			Match:   []of.Match{of.EthType(of.EthIPv6)},
			Actions: []of.Action{of.CT{Commit: true, Zone: 0x5359, Table: -1, NAT: &of.NAT{Kind: "src"}}}},
		{Table: 9, Priority: 200, Match: []of.Match{of.EthType(of.EthIPv4), of.IPDst(netip.PrefixFrom(ip("10.244.1.5"), 32))}, Goto: -1,
			Actions: []of.Action{of.SetEthSrc(mac), of.SetEthDst(pod), of.LoadReg{Index: 1, Value: 5, Mask: 0xffffffff}, of.Output(5)}},
		{Table: 9, Priority: 0, Actions: []of.Action{of.Output(2)}, Goto: -1},
		{Table: 9, Priority: 190, Match: []of.Match{of.EthType(of.EthIPv4), of.IPDst(netip.MustParsePrefix("10.244.2.0/24"))}, Goto: 10,
			Actions: []of.Action{of.SetTunDst(ip("192.168.100.11")), of.LoadReg{Index: 1, Value: 7, Mask: 0xffffffff}}},
		{Table: 9, Priority: 190, Match: []of.Match{of.EthType(of.EthIPv6), of.IPDst(netip.MustParsePrefix("fd00:244:2::/64"))}, Goto: 10,
			Actions: []of.Action{of.SetTunDst(ip("fd00:100::11")), of.LoadReg{Index: 1, Value: 7, Mask: 0xffffffff}}},
		{Table: 1, Priority: 210, Match: []of.Match{of.EthType(of.EthARP), of.ArpSpa(ip("0.0.0.0"))}, Goto: -1},
		{Table: 10, Priority: 0, Actions: []of.Action{of.OutputReg(1)}, Goto: -1},
	}
	return flows, groups
}

var statsRe = regexp.MustCompile(`(duration|n_packets|n_bytes|idle_age|hard_age)=[^ ,]*,? ?`)

// normalized dumps a bridge's flows and groups as sorted lines without
// counters, as OVS itself prints them.
func normalized(t *testing.T, o *ovstest.OVS, br string) []string {
	var lines []string
	for _, out := range []string{o.Ofctl("dump-flows", br), o.Ofctl("dump-groups", br)} {
		for _, l := range strings.Split(out, "\n") {
			l = strings.TrimSpace(statsRe.ReplaceAllString(l, ""))
			if l == "" || strings.HasPrefix(l, "OFPST_") || strings.HasPrefix(l, "NXST_") {
				continue
			}
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return lines
}

func TestModelMatchesOvsOfctl(t *testing.T) {
	o := ovstest.Start(t)
	o.AddBridge("br-a")
	o.AddBridge("br-b")
	flows, groups := sample()

	// br-b: the rendered text, through ovs-ofctl.
	var gtext, ftext []string
	for _, g := range groups {
		gtext = append(gtext, g.Text())
	}
	for _, f := range flows {
		ftext = append(ftext, f.Text())
	}
	dir := t.TempDir()
	gf, ff := filepath.Join(dir, "groups"), filepath.Join(dir, "flows")
	os.WriteFile(gf, []byte(strings.Join(gtext, "\n")+"\n"), 0o644)
	os.WriteFile(ff, []byte(strings.Join(ftext, "\n")+"\n"), 0o644)
	o.Ofctl("add-groups", "br-b", gf)
	o.Ofctl("add-flows", "br-b", ff)

	// br-a: the same through our OpenFlow messages in one bundle.
	h := &nopHandler{connected: make(chan struct{}, 1)}
	c := Dial(o.MgmtSocket("br-a"), h)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	b := Batch{GroupAdds: groups, FlowAdds: flows}
	if err := c.Commit(ctx, &b, nil); err != nil {
		t.Fatal(err)
	}

	a, bb := normalized(t, o, "br-a"), normalized(t, o, "br-b")
	if !slices.Equal(a, bb) {
		t.Fatalf("OpenFlow messages and ovs-ofctl text differ:\nmessages:\n%s\ntext:\n%s", strings.Join(a, "\n"), strings.Join(bb, "\n"))
	}

	// Reading our own flows and groups back through libOpenflow works and
	// gives back exactly the cookies and bucket IDs we computed.
	got, err := c.DumpFlows(ctx, of.CookieTag, of.CookieTagMask, 0)
	if err != nil {
		t.Fatal(err)
	}
	var gotCookies, wantCookies []uint64
	for _, fi := range got {
		gotCookies = append(gotCookies, fi.Cookie)
	}
	for _, f := range flows {
		wantCookies = append(wantCookies, f.Cookie())
	}
	slices.Sort(gotCookies)
	slices.Sort(wantCookies)
	if !slices.Equal(gotCookies, wantCookies) {
		t.Fatalf("dumped cookies %x, want %x", gotCookies, wantCookies)
	}
	gs, err := c.DumpGroups(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint32][]uint32{}
	for _, g := range groups {
		want[g.ID] = g.BucketIDs()
	}
	if len(gs) != len(want) {
		t.Fatalf("dumped groups %+v, want %v", gs, want)
	}
	for _, g := range gs {
		if !slices.Equal(g.BucketIDs, want[g.ID]) {
			t.Fatalf("group %d: dumped bucket IDs %v, want %v", g.ID, g.BucketIDs, want[g.ID])
		}
	}
}
