package ovs

import (
	"net/netip"
	"testing"

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
	winner, loser, winnerOwner := fa, fb, "sp/a"
	if fb.Cookie() < fa.Cookie() {
		winner, loser, winnerOwner = fb, fa, "sp/b"
	}

	s := newState()
	s.setOwner("sp/a", []*of.Flow{fa}, nil)
	s.setOwner("sp/b", []*of.Flow{fb}, nil)
	b := s.pending()
	if len(b.FlowAdds) != 1 || b.FlowAdds[0].Cookie() != winner.Cookie() || len(b.FlowDeletes) != 0 {
		t.Fatalf("first commit: %d adds (cookie %x), %d deletes; want only %x", len(b.FlowAdds), cookieOf(b), len(b.FlowDeletes), winner.Cookie())
	}
	if got := s.Shadowed(); len(got) != 1 || got[loser.Cookie()] != winner.Cookie() {
		t.Fatalf("shadowed = %v", got)
	}
	s.committed()

	// A resync reads back what OVS holds (the winner) and changes nothing.
	for range 2 {
		s.adopt([]ofconn.FlowInfo{{Table: 6, Cookie: winner.Cookie()}}, nil)
		if b := s.pending(); b.Len() != 0 {
			t.Fatalf("resync sends %d messages, want none", b.Len())
		}
		s.committed()
	}

	// The winner's owner goes: the shadowed flow takes its place (its add
	// replaces the old flow, which needs no delete).
	s.removeOwner(winnerOwner)
	b = s.pending()
	if len(b.FlowAdds) != 1 || b.FlowAdds[0].Cookie() != loser.Cookie() || len(b.FlowDeletes) != 0 {
		t.Fatalf("after the winner went: %d adds (cookie %x), %d deletes; want only %x", len(b.FlowAdds), cookieOf(b), len(b.FlowDeletes), loser.Cookie())
	}
	s.committed()
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
