package engine

import (
	"maps"
	"net/netip"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/ovs/hostnet"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// Two service ports claiming one frontend want two flows with one match:
// OVS can hold one. The state installs the lower cookie's, shadows the
// other, keeps that choice across resyncs, and installs the shadowed one
// when the first goes.
func TestFlowsWithOneMatchInstallOneStably(t *testing.T) {
	frontend := func(group uint32) *of.Flow {
		return &of.Flow{Table: 6, Priority: 200, Goto: -1,
			Match:   []of.Match{of.EthType(of.EthIPv4), of.IPProto(of.ProtoTCP), of.IPDst(netip.MustParsePrefix("192.0.2.10/32")), of.L4Dst{Proto: of.ProtoTCP, Port: 30080}},
			Actions: []of.Action{of.ToGroup(group)}}
	}
	fa, fb := frontend(0x80000001), frontend(0x80000002)
	if fa.Identity() != fb.Identity() || fa.Cookie() == fb.Cookie() {
		t.Fatal("the two flows should share their match and differ in actions")
	}
	winner, loser, winnerOwner := fa, fb, OwnerKey("sp/a")
	if fb.Cookie() < fa.Cookie() {
		winner, loser, winnerOwner = fb, fa, "sp/b"
	}

	s := NewState()
	s.setOwner("sp/a", []*of.Flow{fa}, nil, nil)
	s.setOwner("sp/b", []*of.Flow{fb}, nil, nil)
	b := s.Pending(All)
	if len(b.FlowAdds) != 1 || b.FlowAdds[0].Cookie() != winner.Cookie() || len(b.FlowDeletes) != 0 {
		t.Fatalf("first commit: %d adds (cookie %x), %d deletes; want only %x", len(b.FlowAdds), cookieOf(b), len(b.FlowDeletes), winner.Cookie())
	}
	if got := s.Shadowed(); len(got) != 1 || got[loser.Cookie()] != winner.Cookie() {
		t.Fatalf("shadowed = %v", got)
	}
	s.Committed(All)

	// A resync reads back what OVS holds (the winner) and changes nothing.
	for range 2 {
		s.Adopt([]ofconn.FlowInfo{{Table: 6, Cookie: winner.Cookie()}}, nil)
		if b := s.Pending(All); b.Len() != 0 {
			t.Fatalf("resync sends %d messages, want none", b.Len())
		}
		s.Committed(All)
	}

	// The winner's owner goes: the shadowed flow takes its place (its add
	// replaces the old flow, which needs no delete).
	s.removeOwner(winnerOwner)
	b = s.Pending(All)
	if len(b.FlowAdds) != 1 || b.FlowAdds[0].Cookie() != loser.Cookie() || len(b.FlowDeletes) != 0 {
		t.Fatalf("after the winner went: %d adds (cookie %x), %d deletes; want only %x", len(b.FlowAdds), cookieOf(b), len(b.FlowDeletes), loser.Cookie())
	}
	s.Committed(All)
	if len(s.Shadowed()) != 0 || !s.installedFlows[loser.Cookie()] || s.installedFlows[winner.Cookie()] {
		t.Fatalf("shadowed %v, installed %v", s.Shadowed(), s.installedFlows)
	}
}

func cookieOf(b *ofconn.Batch) uint64 {
	if len(b.FlowAdds) == 0 {
		return 0
	}
	return b.FlowAdds[0].Cookie()
}

// After a dump, only what differs from what is wanted is compared and
// sent: an unchanged bridge costs nothing, a missing flow is added, a
// stray flow with the tag deleted, a group with other buckets modified, a
// missing group added.
func TestAdoptComparesOnlyDifferences(t *testing.T) {
	flow, group := tcpFlow, portGroup
	f1, f2 := flow(1), flow(2)
	g1, g2 := group(0x80000001, 1), group(0x80000002, 2)
	s := NewState()
	s.setOwner("sp/a", []*of.Flow{f1, f2}, []*of.Group{g1, g2}, nil)
	s.Pending(All)
	s.Committed(All)

	info := func(fs ...*of.Flow) []ofconn.FlowInfo {
		flows, _ := dumped(fs, nil)
		return flows
	}
	groups := func(gs ...*of.Group) []ofconn.GroupInfo {
		_, groups := dumped(nil, gs)
		return groups
	}
	stray := of.CookieTag | of.CookieKindFlow | 42
	for _, tc := range []struct {
		name   string
		flows  []ofconn.FlowInfo
		groups []ofconn.GroupInfo
		want   ofconn.Batch
	}{
		{"unchanged", info(f1, f2), groups(g1, g2), ofconn.Batch{}},
		{"a flow missing", info(f1), groups(g1, g2), ofconn.Batch{FlowAdds: []*of.Flow{f2}}},
		{"a stray flow", append(info(f1, f2), ofconn.FlowInfo{Table: 6, Cookie: stray}), groups(g1, g2),
			ofconn.Batch{FlowDeletes: []ofconn.CookieMatch{{Cookie: stray, Mask: ^uint64(0)}}}},
		{"a group changed", info(f1, f2), groups(g1, group(g2.ID, 7)), ofconn.Batch{GroupModifies: []*of.Group{g2}}},
		{"a group missing", info(f1, f2), groups(g2), ofconn.Batch{GroupAdds: []*of.Group{g1}}},
	} {
		s.Adopt(tc.flows, tc.groups)
		if n := len(s.touchedFlows) + len(s.touchedGroups); n != tc.want.Len() {
			t.Errorf("%s: %d flows and groups to compare, want %d", tc.name, n, tc.want.Len())
		}
		got := s.Pending(All)
		if len(got.FlowAdds) != len(tc.want.FlowAdds) || len(got.FlowDeletes) != len(tc.want.FlowDeletes) ||
			len(got.GroupAdds) != len(tc.want.GroupAdds) || len(got.GroupModifies) != len(tc.want.GroupModifies) || len(got.GroupDeletes) != 0 {
			t.Errorf("%s: batch %+v, want %+v", tc.name, got, tc.want)
		}
		for i := range got.FlowAdds {
			if got.FlowAdds[i] != tc.want.FlowAdds[i] {
				t.Errorf("%s: adds flow %s", tc.name, got.FlowAdds[i].Text())
			}
		}
		for i := range got.FlowDeletes {
			if got.FlowDeletes[i] != tc.want.FlowDeletes[i] {
				t.Errorf("%s: deletes %+v", tc.name, got.FlowDeletes[i])
			}
		}
		for i, g := range got.GroupModifies {
			if g != tc.want.GroupModifies[i] {
				t.Errorf("%s: modifies group %d", tc.name, g.ID)
			}
		}
		for i, g := range got.GroupAdds {
			if g != tc.want.GroupAdds[i] {
				t.Errorf("%s: adds group %d", tc.name, g.ID)
			}
		}
		s.Committed(All)
	}
}

// The host's share of a service port follows the node's addresses: an
// external IP that is the node's own is DNATed on the node (a port), not
// routed into the bridge — with --ovs-node-ips from the start, and after
// the node's addresses change.
func TestHostShareFollowsNodeIPs(t *testing.T) {
	nodeIP, other := netip.MustParseAddr("192.168.100.10"), netip.MustParseAddr("192.168.100.20")
	cfg := testConfig()
	cfg.NodeIPs = []netip.Addr{nodeIP}
	m := NewModel(cfg, false)
	sp := &graph.ServicePort{Name: graph.ServicePortName{Namespace: "ns", Name: "web", Protocol: graph.TCP},
		ClusterIPs: []netip.Addr{netip.MustParseAddr("10.96.0.10")}, Port: 80, ExternalIPs: []netip.Addr{nodeIP}}
	m.setServicePort(sp)
	check := func(when string, dnated bool) {
		t.Helper()
		// An external IP that is not the node's is captured on its port.
		routed := m.host.captures[hostnet.Capture{IP: nodeIP, Proto: "tcp", Port: 80}] > 0 || m.host.frontends[nodeIP] > 0
		port := m.host.nodePorts[hostnet.ProtoPort{Proto: "tcp", Port: 80}] > 0
		if routed == dnated || port != dnated {
			t.Errorf("%s: %s captured %v, port 80 DNATed %v", when, nodeIP, routed, port)
		}
		if m.host.frontends[nodeIP] > 0 {
			t.Errorf("%s: the external IP %s is routed whole", when, nodeIP)
		}
		if m.host.frontends[sp.ClusterIPs[0]] != 1 {
			t.Errorf("%s: the ClusterIP is counted %d times", when, m.host.frontends[sp.ClusterIPs[0]])
		}
	}
	check("configured node IP", true)
	m.SetNode(graph.Node{Name: "n", IPs: []netip.Addr{nodeIP}})
	check("the same node IP again", true)
	m.nodeIPs = nil // addresses from the Node object from here on
	m.SetNode(graph.Node{Name: "n", IPs: []netip.Addr{other}})
	check("another node IP", false)
}

// A cookie is 44 bits of a hash: two different flows may share one. The
// second is left out (OVS would take its add as a repeat of the first)
// and said, and the first stays installed and counted once; the same
// flow wanted by two owners is shared as before.
func TestCookieCollisionIsLeftOutAndSaid(t *testing.T) {
	flowTo := func(port uint16) *of.Flow {
		return &of.Flow{Table: 6, Priority: 200, Goto: -1,
			Match:   []of.Match{of.EthType(of.EthIPv4), of.IPProto(of.ProtoTCP), of.L4Dst{Proto: of.ProtoTCP, Port: port}},
			Actions: []of.Action{of.ToGroup(0x80000001)}}
	}
	a, b, aAgain := flowTo(80), flowTo(81), flowTo(80)
	s := NewState()
	const forced = of.CookieTag | 0x1234
	s.cookieOf = func(f *of.Flow) uint64 { return forced } // every flow collides
	s.setOwner("sp/a", []*of.Flow{a}, nil, nil)
	s.setOwner("sp/shared", []*of.Flow{aAgain}, nil, nil) // the same flow again: no Collision
	if got := s.TakeCollided(); len(got) != 0 {
		t.Fatalf("the same flow twice reported as a Collision: %+v", got)
	}
	s.setOwner("sp/b", []*of.Flow{b}, nil, nil)
	got := s.TakeCollided()
	if c, ok := got[forced]; !ok || c.Owner != "sp/b" || c.Lost != b || c.Kept != a {
		t.Fatalf("collisions = %+v; want sp/b's flow left out for sp/a's", got)
	}
	if again := s.TakeCollided(); len(again) != 0 {
		t.Fatalf("a Collision is taken once, got it again: %+v", again)
	}
	batch := s.Pending(All)
	if len(batch.FlowAdds) != 1 || batch.FlowAdds[0] != a {
		t.Fatalf("adds %v; want only the first flow", batch.FlowAdds)
	}
	if e := s.flows[forced]; e.refs != 2 {
		t.Fatalf("the installed flow has %d references, want 2 (sp/a and sp/shared, not sp/b)", e.refs)
	}
}

// A committed flow or group of an owner that can render them again is not
// kept, only its hashes: a repair renders the owner once and sends the
// same flows and groups; a flow two owners want is kept; an owner without
// a renderer keeps its flows.
func TestCommittedFlowsAndGroupsAreRenderedAgain(t *testing.T) {
	flow := func(port uint16) *of.Flow {
		return &of.Flow{Table: 6, Priority: 200, Goto: -1,
			Match:   []of.Match{of.EthType(of.EthIPv4), of.IPProto(of.ProtoTCP), of.L4Dst{Proto: of.ProtoTCP, Port: port}},
			Actions: []of.Action{of.Output(1)}}
	}
	group := func(id uint32) *of.Group {
		return &of.Group{ID: id, Buckets: of.BucketList{{of.Output(1)}, {of.Output(id & 0xff)}}}
	}
	renders := 0
	again := func(gid uint32, ports ...uint16) func() Rendering {
		return func() Rendering {
			renders++
			var r Rendering
			for _, p := range ports {
				r.flows = append(r.flows, flow(p))
			}
			if gid != 0 {
				r.groups = []*of.Group{group(gid)}
			}
			return r
		}
	}
	s := NewState()
	s.setOwner("sp/a", []*of.Flow{flow(80), flow(81)}, []*of.Group{group(0x80000001)}, again(0x80000001, 80, 81))
	s.setOwner("sp/b", []*of.Flow{flow(90)}, []*of.Group{group(0x80000002)}, again(0x80000002, 90))
	s.setOwner("sp/c", []*of.Flow{flow(90)}, nil, again(0, 90)) // sp/b's flow again: pinned
	s.setOwner("static", []*of.Flow{flow(100)}, nil, nil)
	if b := s.Pending(All); len(b.FlowAdds) != 4 || len(b.GroupAdds) != 2 || renders != 0 {
		t.Fatalf("first commit: %d flow and %d group adds, %d renders; want 4 and 2 from what was set, no render", len(b.FlowAdds), len(b.GroupAdds), renders)
	}
	s.Committed(All)
	kept := map[uint16]bool{}
	for _, p := range []uint16{80, 81, 90, 100} {
		kept[p] = s.flows[flow(p).Cookie()].flow != nil
	}
	if want := map[uint16]bool{80: false, 81: false, 90: true, 100: true}; !maps.Equal(kept, want) {
		t.Fatalf("flows kept after the commit: %v, want %v", kept, want)
	}
	if s.groups[0x80000001].group != nil || s.groups[0x80000002].group != nil {
		t.Fatal("groups kept after the commit")
	}

	s.Adopt(nil, nil) // the bridge lost everything
	b := s.Pending(All)
	if len(b.FlowAdds) != 4 || len(b.GroupAdds) != 2 || renders != 2 {
		t.Fatalf("repair: %d flow and %d group adds, %d renders; want 4 and 2, sp/a and sp/b rendered once each", len(b.FlowAdds), len(b.GroupAdds), renders)
	}
	for _, f := range b.FlowAdds {
		if e := s.flows[f.Cookie()]; e == nil || e.identity != f.Identity() || e.sum != f.Sum() {
			t.Errorf("repair sent %s, not a desired flow", f.Text())
		}
	}
	for _, g := range b.GroupAdds {
		if e := s.groups[g.ID]; e == nil || e.sig != groupSignature(g.BucketIDs()) {
			t.Errorf("repair sent %s, not a desired group", g.Text())
		}
	}
	s.Committed(All)

	// A group changed behind the driver's back is modified back.
	s.Adopt(nil, []ofconn.GroupInfo{{ID: 0x80000001, BucketIDs: []uint32{1}}, {ID: 0x80000002, BucketIDs: group(0x80000002).BucketIDs()}})
	if b := s.Pending(All); len(b.GroupModifies) != 1 || b.GroupModifies[0].ID != 0x80000001 || len(b.GroupAdds) != 0 {
		t.Errorf("changed group: %d modifies (%v), %d adds; want group 0x80000001 modified", len(b.GroupModifies), b.GroupModifies, len(b.GroupAdds))
	}
	s.Committed(All)
	if f := s.FlowOf(flow(81).Cookie(), nil); f == nil || !f.Same(flow(81)) {
		t.Errorf("flowOf(81) = %v, want the flow rendered again", f)
	}
}
