package engine

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// An audit's read is adopted except for what commits changed while it
// read, or while it copied the installed view (Fill, a pause after every
// entry here): those keep the commits' view (nothing is undone or sent
// again), and drift elsewhere is still found and repaired.
func TestEndAuditKeepsWhatCommitsChanged(t *testing.T) {
	flow, group := tcpFlow, portGroup
	f1, f2, f3 := flow(1), flow(2), flow(3)
	g1, g2 := group(0x80000001, 1), group(0x80000002, 2)
	g2b := group(g2.ID, 9)
	read := func(fs []*of.Flow, gs ...*of.Group) ([]ofconn.FlowInfo, []ofconn.GroupInfo) { return dumped(fs, gs) }
	commit := func(s *State) {
		s.Pending(All)
		s.Committed(All)
	}
	type result struct {
		Asked                  []uint32
		Adopted                bool
		FlowDrift, GroupDrift  int
		FlowAdds, FlowDeletes  []uint64
		GroupAdds, GroupMods   []uint32
		InstalledF, InstalledG int
	}
	for _, tc := range []struct {
		name      string
		meanwhile func(s *State) // commits while the audit reads
		flows     []*of.Flow     // what the audit read
		groups    []*of.Group
		stray     uint64 // a flow of the driver's tag it read besides (0: none)
		want      result
	}{
		{name: "nothing changed, nothing drifted", flows: []*of.Flow{f1, f2}, groups: []*of.Group{g1, g2},
			want: result{Adopted: true}},
		{name: "drift is repaired", flows: []*of.Flow{f1}, groups: []*of.Group{g1, g2b},
			want: result{Adopted: true, FlowDrift: 1, GroupDrift: 1, FlowAdds: []uint64{f2.Cookie()}, GroupMods: []uint32{g2.ID}}},
		{name: "a stray flow is deleted, a missing group added", flows: []*of.Flow{f1, f2}, groups: []*of.Group{g1}, stray: of.CookieTag | of.CookieKindFlow | 42,
			want: result{Adopted: true, FlowDrift: 1, GroupDrift: 1, FlowDeletes: []uint64{of.CookieTag | of.CookieKindFlow | 42}, GroupAdds: []uint32{g2.ID}}},
		{name: "a flow read twice (its cookie in another table too) is no drift", flows: []*of.Flow{f1, f2}, groups: []*of.Group{g1, g2}, stray: f1.Cookie(),
			want: result{Adopted: true}},
		{name: "a flow added meanwhile is not added again", flows: []*of.Flow{f1, f2}, groups: []*of.Group{g1, g2},
			meanwhile: func(s *State) { s.setOwner("sp/b", []*of.Flow{f3}, nil, nil); commit(s) },
			want:      result{Adopted: true}},
		{name: "a flow removed meanwhile is not deleted again", flows: []*of.Flow{f1, f2}, groups: []*of.Group{g1, g2},
			meanwhile: func(s *State) { s.setOwner("sp/a", []*of.Flow{f1}, []*of.Group{g1, g2}, nil); commit(s) },
			want:      result{Adopted: true}},
		{name: "a group modified meanwhile keeps its new buckets", flows: []*of.Flow{f1, f2}, groups: []*of.Group{g1, g2},
			meanwhile: func(s *State) { s.setOwner("sp/a", []*of.Flow{f1, f2}, []*of.Group{g1, g2b}, nil); commit(s) },
			want:      result{Adopted: true}},
		{name: "a group changed behind the driver, then by a commit, is the commit's", flows: []*of.Flow{f1, f2}, groups: []*of.Group{g1, group(g2.ID, 7)},
			meanwhile: func(s *State) { s.setOwner("sp/a", []*of.Flow{f1, f2}, []*of.Group{g1, g2b}, nil); commit(s) },
			want:      result{Adopted: true}},
		{name: "drift elsewhere is found while commits go on", flows: []*of.Flow{f2}, groups: []*of.Group{g1, g2},
			meanwhile: func(s *State) { s.setOwner("sp/a", []*of.Flow{f1, f2}, []*of.Group{g1, g2b}, nil); commit(s) },
			want:      result{Adopted: true, FlowDrift: 1, FlowAdds: []uint64{f1.Cookie()}}},
		{name: "a full read-back meanwhile drops the audit", flows: nil, groups: nil,
			meanwhile: func(s *State) { s.Adopt(read([]*of.Flow{f1, f2}, g1, g2)) },
			want:      result{}},
	} {
		for _, copying := range []bool{false, true} {
			name := tc.name + map[bool]string{false: ", after the copy", true: ", during the copy"}[copying]
			t.Run(name, func(t *testing.T) {
				s := NewState()
				s.setOwner("sp/a", []*of.Flow{f1, f2}, []*of.Group{g1, g2}, nil)
				commit(s)
				pending := tc.meanwhile
				meanwhile := func() {
					if pending != nil {
						pending(s)
						pending = nil
					}
				}
				view := s.BeginAudit()
				filled := view.Fill(&Pause{Every: 1, Yield: func() {
					if copying {
						meanwhile()
					}
				}})
				view.Prepare()
				meanwhile()
				flows, groups := read(tc.flows, tc.groups...)
				if tc.stray != 0 {
					flows = append(flows, ofconn.FlowInfo{Table: 6, Cookie: tc.stray})
				}
				want := tc.want
				want.Asked = []uint32{g1.ID, g2.ID}
				var got result
				got.Asked = view.IDs
				drift := AuditDrift{}
				if filled {
					drift = view.Compare(flows, groups)
				} else {
					got.Asked = want.Asked // partial: never read
				}
				if dropped := copying && !tc.want.Adopted; filled == dropped {
					t.Fatalf("Fill reported %v, want %v", filled, !dropped)
				}
				got.FlowDrift, got.GroupDrift, got.Adopted = s.EndAudit(drift)
				b := s.Pending(All)
				for _, f := range b.FlowAdds {
					got.FlowAdds = append(got.FlowAdds, f.Cookie())
				}
				for _, d := range b.FlowDeletes {
					got.FlowDeletes = append(got.FlowDeletes, d.Cookie)
				}
				for _, g := range b.GroupAdds {
					got.GroupAdds = append(got.GroupAdds, g.ID)
				}
				for _, g := range b.GroupModifies {
					got.GroupMods = append(got.GroupMods, g.ID)
				}
				s.Committed(All)
				got.InstalledF, got.InstalledG = s.InstalledFlows(), s.InstalledGroups()
				want.InstalledF, want.InstalledG = len(s.flows), len(s.groups)
				slices.Sort(got.FlowAdds)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("(-want +got)\n%s", diff)
				}
				if s.Auditing() {
					t.Error("the audit is still under way after EndAudit")
				}
			})
		}
	}
}
