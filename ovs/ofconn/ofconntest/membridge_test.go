package ofconntest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"

	"antrea.io/libOpenflow/openflow15"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// bridgeRule is one thing OVS does with a bundle, as a case: a bundle
// committed on a bridge holding what setup left, and what OVS answers
// and holds afterwards. TestMemBridgeFollowsOVSRules holds the in-memory
// bridge to every case; TestOVSFollowsTheMemBridgeRules (root) holds a
// real OVS to the same cases.
type bridgeRule struct {
	name     string
	setup    []ofconn.Batch
	batch    ofconn.Batch
	refused  refusal // the error OVS answers with; zero: accepted
	atCommit bool    // refused when committed, not when the message was added
	flows    []*of.Flow
	groups   []uint32 // installed afterwards
}

var (
	ip4     = of.EthType(of.EthIPv4)
	tcp     = of.IPProto(of.ProtoTCP)
	grpA    = uint32(0x80000001)
	grpB    = uint32(0x80000002)
	prio100 = uint16(100)
)

func flowTo(group uint32) *of.Flow {
	return &of.Flow{Table: 6, Priority: 200, Goto: -1, Match: []of.Match{of.InPort(1)}, Actions: []of.Action{of.ToGroup(group)}}
}

func flowIn(table uint8, prio uint16, match []of.Match, acts ...of.Action) *of.Flow {
	return &of.Flow{Table: table, Priority: prio, Goto: -1, Match: match, Actions: acts}
}

func groupOf(id uint32, ports ...uint32) *of.Group {
	var l of.BucketList
	for _, p := range ports {
		l = append(l, []of.Action{of.Output(p)})
	}
	return &of.Group{ID: id, Buckets: l}
}

func bridgeRules() []bridgeRule {
	other := flowIn(3, prio100, nil, of.Output(2))
	toA, toB := flowTo(grpA), flowTo(grpB)
	toB.Priority = 190
	byPortThenType := flowIn(4, prio100, []of.Match{of.InPort(1), ip4}, of.Output(2))
	byTypeThenPort := flowIn(4, prio100, []of.Match{ip4, of.InPort(1)}, of.Output(3))
	ct := of.CT{Zone: 7, Table: -1}
	return []bridgeRule{
		{name: "a flow and the group it sends to, in one bundle",
			batch: ofconn.Batch{GroupAdds: []*of.Group{groupOf(grpA, 1)}, FlowAdds: []*of.Flow{toA}},
			flows: []*of.Flow{toA}, groups: []uint32{grpA}},
		{name: "a flow sending to a missing group",
			batch:   ofconn.Batch{FlowAdds: []*of.Flow{other, toA}},
			refused: refusal{openflow15.ET_BAD_ACTION, openflow15.BAC_BAD_OUT_GROUP}, atCommit: true},
		{name: "adding a group that exists",
			setup:   []ofconn.Batch{{GroupAdds: []*of.Group{groupOf(grpA, 1)}}},
			batch:   ofconn.Batch{GroupAdds: []*of.Group{groupOf(grpA, 2)}},
			refused: refusal{openflow15.ET_GROUP_MOD_FAILED, openflow15.GMFC_GROUP_EXISTS}, atCommit: true,
			groups: []uint32{grpA}},
		{name: "one group added twice in one bundle",
			batch:   ofconn.Batch{GroupAdds: []*of.Group{groupOf(grpA, 1), groupOf(grpA, 1)}},
			refused: refusal{openflow15.ET_GROUP_MOD_FAILED, openflow15.GMFC_GROUP_EXISTS}, atCommit: true},
		{name: "modifying a missing group",
			batch:   ofconn.Batch{GroupModifies: []*of.Group{groupOf(grpA, 1)}},
			refused: refusal{openflow15.ET_GROUP_MOD_FAILED, openflow15.GMFC_UNKNOWN_GROUP}, atCommit: true},
		{name: "modifying a group",
			setup:  []ofconn.Batch{{GroupAdds: []*of.Group{groupOf(grpA, 1)}}},
			batch:  ofconn.Batch{GroupModifies: []*of.Group{groupOf(grpA, 2, 3)}},
			groups: []uint32{grpA}},
		{name: "deleting a missing group and flows that are not there",
			batch: ofconn.Batch{FlowDeletes: []ofconn.CookieMatch{{Cookie: 0x77, Mask: ^uint64(0)}}, GroupDeletes: []uint32{grpB}}},
		{name: "deleting a group deletes the flows that send to it",
			setup: []ofconn.Batch{{GroupAdds: []*of.Group{groupOf(grpA, 1), groupOf(grpB, 2)}, FlowAdds: []*of.Flow{toA, toB, other}}},
			batch: ofconn.Batch{GroupDeletes: []uint32{grpA}},
			flows: []*of.Flow{toB, other}, groups: []uint32{grpB}},
		{name: "deleting flows by cookie",
			setup: []ofconn.Batch{{FlowAdds: []*of.Flow{other, byPortThenType}}},
			batch: ofconn.Batch{FlowDeletes: []ofconn.CookieMatch{{Cookie: other.Cookie(), Mask: ^uint64(0)}}},
			flows: []*of.Flow{byPortThenType}},
		{name: "a flow with the table, priority and match of another replaces it, whatever the fields' order",
			setup: []ofconn.Batch{{FlowAdds: []*of.Flow{byPortThenType}}},
			batch: ofconn.Batch{FlowAdds: []*of.Flow{byTypeThenPort}},
			flows: []*of.Flow{byTypeThenPort}},
		{name: "a refused message keeps the whole bundle out",
			setup:   []ofconn.Batch{{FlowAdds: []*of.Flow{other}}},
			batch:   ofconn.Batch{GroupAdds: []*of.Group{groupOf(grpB, 1)}, FlowAdds: []*of.Flow{toB, toA}, FlowDeletes: []ofconn.CookieMatch{{Cookie: other.Cookie(), Mask: ^uint64(0)}}},
			refused: refusal{openflow15.ET_BAD_ACTION, openflow15.BAC_BAD_OUT_GROUP}, atCommit: true,
			flows: []*of.Flow{other}},
		// Two buckets with one ID are refused (GMFC_BAD_BUCKET); equal
		// buckets are given two IDs (of.Group.BucketIDs), so none are.
		{name: "two equal buckets",
			batch:  ofconn.Batch{GroupAdds: []*of.Group{groupOf(grpA, 1, 1)}},
			groups: []uint32{grpA}},
		{name: "a field matched twice",
			batch:   ofconn.Batch{FlowAdds: []*of.Flow{flowIn(3, prio100, []of.Match{ip4, ip4})}},
			refused: refusal{openflow15.PET_BAD_MATCH, openflow15.BMC_DUP_FIELD}},
		{name: "a value with bits outside its mask",
			batch:   ofconn.Batch{FlowAdds: []*of.Flow{flowIn(3, prio100, []of.Match{of.Reg{Index: 0, Value: 3, Mask: 1}})}},
			refused: refusal{openflow15.PET_BAD_MATCH, openflow15.BMC_BAD_WILDCARDS}},
		{name: "tcp_dst without nw_proto=6",
			batch:   ofconn.Batch{FlowAdds: []*of.Flow{flowIn(3, prio100, []of.Match{ip4, of.L4Dst{Proto: of.ProtoTCP, Port: 80}})}},
			refused: refusal{openflow15.PET_BAD_MATCH, openflow15.BMC_BAD_PREREQ}},
		{name: "a field before its prerequisites",
			batch:   ofconn.Batch{FlowAdds: []*of.Flow{flowIn(3, prio100, []of.Match{of.L4Dst{Proto: of.ProtoTCP, Port: 80}, tcp, ip4})}},
			refused: refusal{openflow15.PET_BAD_MATCH, openflow15.BMC_BAD_PREREQ}},
		{name: "an IPv4 address on an IPv6 flow",
			batch:   ofconn.Batch{FlowAdds: []*of.Flow{flowIn(3, prio100, []of.Match{of.EthType(of.EthIPv6), of.IPDst(netip.MustParsePrefix("10.0.0.1/32"))})}},
			refused: refusal{openflow15.PET_BAD_MATCH, openflow15.BMC_BAD_PREREQ}},
		{name: "goto an earlier table",
			batch:   ofconn.Batch{FlowAdds: []*of.Flow{{Table: 5, Priority: 1, Goto: 3}}},
			refused: refusal{openflow15.ET_BAD_INSTRUCTION, openflow15.BIC_BAD_TABLE_ID}},
		{name: "goto its own table",
			batch:   ofconn.Batch{FlowAdds: []*of.Flow{{Table: 5, Priority: 1, Goto: 5}}},
			refused: refusal{openflow15.ET_BAD_INSTRUCTION, openflow15.BIC_BAD_TABLE_ID}},
		{name: "ct in a flow that does not match IP",
			batch:   ofconn.Batch{FlowAdds: []*of.Flow{flowIn(3, prio100, []of.Match{of.InPort(1)}, ct)}},
			refused: refusal{openflow15.ET_BAD_ACTION, openflow15.BAC_MATCH_INCONSISTENT}},
		{name: "ct in an IP flow",
			batch: ofconn.Batch{FlowAdds: []*of.Flow{flowIn(3, prio100, []of.Match{ip4}, ct)}},
			flows: []*of.Flow{flowIn(3, prio100, []of.Match{ip4}, ct)}},
		{name: "dec_ttl in a flow that does not match IP",
			batch:   ofconn.Batch{FlowAdds: []*of.Flow{flowIn(3, prio100, []of.Match{of.InPort(1)}, of.DecTTL{}, of.Output(2))}},
			refused: refusal{openflow15.ET_BAD_ACTION, openflow15.BAC_MATCH_INCONSISTENT}},
		{name: "dec_ttl in an IP flow, dumped back as it was written",
			batch: ofconn.Batch{FlowAdds: []*of.Flow{flowIn(3, prio100, []of.Match{ip4}, of.DecTTL{}, of.Output(2))}},
			flows: []*of.Flow{flowIn(3, prio100, []of.Match{ip4}, of.DecTTL{}, of.Output(2))}},
		{name: "a bucket sending to a missing group",
			batch:  ofconn.Batch{GroupAdds: []*of.Group{{ID: grpA, Buckets: of.BucketList{{of.ToGroup(grpB)}}}}},
			groups: []uint32{grpA}},
		{name: "deleting a group a bucket sends to leaves the bucket",
			setup:  []ofconn.Batch{{GroupAdds: []*of.Group{groupOf(grpB, 1), {ID: grpA, Buckets: of.BucketList{{of.ToGroup(grpB)}}}}}},
			batch:  ofconn.Batch{GroupDeletes: []uint32{grpB}},
			groups: []uint32{grpA}},
		{name: "a flow in table 254",
			batch:   ofconn.Batch{FlowAdds: []*of.Flow{{Table: 254, Priority: 1, Goto: -1}}},
			refused: refusal{openflow15.ET_BAD_REQUEST, openflow15.BRC_EPERM}},
	}
}

var errCodeRe = regexp.MustCompile(`OpenFlow error type (\d+) code (\d+)`)

// checkRule commits a rule's setup and bundle over c (to a bridge with
// nothing on it) and checks the answer and what the bridge holds.
func checkRule(t *testing.T, c *ofconn.Conn, r bridgeRule) {
	t.Helper()
	ctx := context.Background()
	for i := range r.setup {
		if err := c.Commit(ctx, &r.setup[i], nil); err != nil {
			t.Fatalf("setup %d: %v", i, err)
		}
	}
	sent := false
	err := c.Commit(ctx, &r.batch, func() { sent = true })
	var got refusal
	if m := errCodeRe.FindStringSubmatch(fmt.Sprint(err)); m != nil {
		fmt.Sscan(m[1], &got.typ)
		fmt.Sscan(m[2], &got.code)
	}
	var refused *ofconn.RefusedError
	switch {
	case r.refused == refusal{} && err != nil:
		t.Fatalf("refused: %v", err)
	case r.refused != refusal{} && (!errors.As(err, &refused) || got != r.refused):
		t.Fatalf("answer %v, want refused with %s (OpenFlow error type %d code %d)", err, r.refused, r.refused.typ, r.refused.code)
	case r.refused != refusal{} && sent != r.atCommit:
		t.Fatalf("refused at commit: %v, want %v (%v)", sent, r.atCommit, err)
	}
	flows, err := c.DumpFlows(ctx, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var gotCookies, wantCookies []string
	for _, f := range flows {
		gotCookies = append(gotCookies, fmt.Sprintf("%#x", f.Cookie))
	}
	for _, f := range r.flows {
		wantCookies = append(wantCookies, fmt.Sprintf("%#x", f.Cookie()))
	}
	slices.Sort(gotCookies)
	slices.Sort(wantCookies)
	if !slices.Equal(gotCookies, wantCookies) {
		t.Errorf("flows afterwards %v, want %v", gotCookies, wantCookies)
	}
	groups, err := c.DumpGroups(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var gotGroups []uint32
	for _, g := range groups {
		gotGroups = append(gotGroups, g.ID)
	}
	slices.Sort(gotGroups)
	if !slices.Equal(gotGroups, r.groups) {
		t.Errorf("groups afterwards %v, want %v", gotGroups, r.groups)
	}
}

func TestMemBridgeFollowsOVSRules(t *testing.T) {
	for _, r := range bridgeRules() {
		t.Run(r.name, func(t *testing.T) {
			br := NewBridge()
			c := InMemory(br)
			defer c.Close()
			checkRule(t, c, r)
		})
	}
}

// A dump answers with what the bridge holds, read back by the same code
// that reads OVS's answers: every flow's table and cookie, every group's
// bucket IDs; Dump lists them as text.
func TestMemBridgeDumpsWhatItHolds(t *testing.T) {
	br := NewBridge()
	c := InMemory(br)
	defer c.Close()
	g := groupOf(grpA, 1, 2, 3)
	f := flowTo(grpA)
	tagged := &of.Flow{Table: 2, Priority: 7, Goto: 3, Match: []of.Match{ip4}}
	ctx := context.Background()
	if err := c.Commit(ctx, &ofconn.Batch{GroupAdds: []*of.Group{g}, FlowAdds: []*of.Flow{f, tagged}}, nil); err != nil {
		t.Fatal(err)
	}
	flows, err := c.DumpFlows(ctx, tagged.Cookie(), ^uint64(0), 1)
	if err != nil || len(flows) != 1 || flows[0] != (ofconn.FlowInfo{Table: 2, Cookie: tagged.Cookie()}) {
		t.Fatalf("dump by cookie: %+v, %v", flows, err)
	}
	groups, err := c.DumpGroups(ctx, 1)
	if err != nil || len(groups) != 1 || groups[0].ID != grpA || !slices.Equal(groups[0].BucketIDs, g.BucketIDs()) {
		t.Fatalf("group dump: %+v, %v; want bucket IDs %v", groups, err, g.BucketIDs())
	}
	want := strings.Join([]string{FlowDumpText(tagged), FlowDumpText(f), GroupDumpText(g)}, "\n") + "\n"
	if got := br.Dump(); got != want {
		t.Fatalf("Dump:\n%s\nwant:\n%s", got, want)
	}
	if !strings.HasPrefix(FlowDumpText(tagged), fmt.Sprintf("cookie=%#x, table=2, priority=7,dl_type=0x0800 actions=goto_table:3", tagged.Cookie())) {
		t.Fatalf("dump text %q", FlowDumpText(tagged))
	}
	if got := br.Counts(); got != (Counts{Bundles: 1, FlowMods: 2, GroupMods: 1}) {
		t.Fatalf("counts %+v", got)
	}
}

// A lost connection: before the commit nothing is applied, after it the
// bundle is; either way the caller sees an error that is not a refusal,
// drops the link and dials a new one for the next bundle.
func TestMemBridgeLosesConnections(t *testing.T) {
	for _, tc := range []struct {
		fault   Fault
		applied bool
	}{{LoseBeforeCommit, false}, {LoseAfterCommit, true}} {
		br := NewBridge()
		c := InMemory(br)
		br.FailNext(tc.fault)
		f := flowIn(3, prio100, nil, of.Output(2))
		err := c.Commit(context.Background(), &ofconn.Batch{FlowAdds: []*of.Flow{f}}, nil)
		var refused *ofconn.RefusedError
		if err == nil || errors.As(err, &refused) {
			t.Fatalf("fault %d: %v, want a lost connection", tc.fault, err)
		}
		if got := br.Counts().Bundles == 1; got != tc.applied {
			t.Fatalf("fault %d: applied %v, want %v", tc.fault, got, tc.applied)
		}
		if err := c.Commit(context.Background(), &ofconn.Batch{FlowAdds: []*of.Flow{f}}, nil); err != nil {
			t.Fatalf("fault %d: the next bundle: %v", tc.fault, err)
		}
		c.Close()
	}
}

// Two buckets with one ID are refused when the message is taken, as OVS
// refuses them (the encoder never sends them: equal buckets get two IDs,
// so this message is made by hand).
func TestTwoBucketsWithOneIDAreRefused(t *testing.T) {
	msg, err := groupOf(grpA, 1, 2).AppendGroupMod(nil, openflow15.OFPGC_ADD, 1)
	if err != nil {
		t.Fatal(err)
	}
	first := msg[groupModFixedLen:]
	second := first[binary.BigEndian.Uint16(first):]
	copy(second[4:8], first[4:8]) // the second bucket takes the first's ID
	_, err = decodeMessage(msg)
	if want := (refusal{openflow15.ET_GROUP_MOD_FAILED, openflow15.GMFC_BAD_BUCKET}); err != want {
		t.Fatalf("got %v, want %v", err, want)
	}
}
