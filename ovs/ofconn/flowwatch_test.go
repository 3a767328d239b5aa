//go:build linux

package ofconn

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// changeLog collects what a flow monitor reports.
type changeLog struct {
	mu  sync.Mutex
	got []FlowChange
}

func (l *changeLog) add(ch FlowChange) {
	l.mu.Lock()
	l.got = append(l.got, ch)
	l.mu.Unlock()
}

// take waits until the last change reported is last (or the time is
// up), and returns every change reported since the previous take.
func (l *changeLog) take(t *testing.T, last FlowChange) []FlowChange {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		l.mu.Lock()
		if n := len(l.got); n > 0 && l.got[n-1] == last {
			got := l.got
			l.got = nil
			l.mu.Unlock()
			return got
		}
		l.mu.Unlock()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Fatalf("no %+v reported; reported so far: %+v", last, l.got)
	return nil
}

// On a real OVS, the flow monitor on the bundles' link reports what
// ovs-ofctl adds, modifies and deletes, each in full, and nothing of the
// driver's own bundles (abbreviated by OVS), a group deleted with its
// flows among them; arming it, and losing its
// link, report that changes may have gone unseen, and the next link is
// watched again.
func TestFlowMonitorReportsOthersChangesOnly(t *testing.T) {
	o, c, ctx := dialedBridge(t, 60*time.Second)
	var log changeLog
	c.WatchFlows(log.add)
	if c.Watching() {
		t.Fatal("watching before any link was dialled")
	}
	own := &of.Flow{Table: 3, Priority: 100, Goto: -1, Match: []of.Match{of.EthType(of.EthIPv4)}, Actions: []of.Action{of.Output(2)}}
	if err := c.Commit(ctx, &Batch{FlowAdds: []*of.Flow{own}}, nil); err != nil {
		t.Fatal(err)
	}
	if !c.Watching() {
		t.Fatal("not watching once a bundle was committed")
	}
	const cookie = 0x77
	foreign := FlowChange{Kind: FlowAdded, Table: 4, Cookie: cookie}
	o.Ofctl("add-flow", "br-a", "table=4,cookie=0x77,priority=5,ip,actions=drop")
	if diff := cmp.Diff([]FlowChange{{Kind: FlowsUnknown}, foreign}, log.take(t, foreign)); diff != "" {
		t.Errorf("arming, an own bundle, then ovs-ofctl's add: (-want +got)\n%s", diff)
	}

	// A Service's flows and group, added and then deleted in one bundle
	// each, as the driver does; and an own modification.
	g := &of.Group{ID: 0x59000001, Buckets: of.BucketList{{of.Output(2)}}}
	toGroup := &of.Flow{Table: 3, Priority: 110, Goto: -1, Match: []of.Match{of.EthType(of.EthIPv4), of.IPProto(of.ProtoTCP)}, Actions: []of.Action{of.ToGroup(g.ID)}}
	if err := c.Commit(ctx, &Batch{GroupAdds: []*of.Group{g}, FlowAdds: []*of.Flow{toGroup}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(ctx, &Batch{FlowDeletes: []CookieMatch{{Cookie: toGroup.Cookie(), Mask: ^uint64(0)}}, GroupDeletes: []uint32{g.ID}}, nil); err != nil {
		t.Fatal(err)
	}
	own2 := &of.Flow{Table: 3, Priority: 90, Goto: -1, Match: []of.Match{of.EthType(of.EthIPv6)}, Actions: []of.Action{of.Output(3)}}
	if err := c.Commit(ctx, &Batch{FlowAdds: []*of.Flow{own2}, FlowDeletes: []CookieMatch{{Cookie: own.Cookie(), Mask: ^uint64(0)}}}, nil); err != nil {
		t.Fatal(err)
	}
	o.Ofctl("mod-flows", "br-a", "table=4,cookie=0x77/-1,ip,actions=output:1")
	o.Ofctl("del-flows", "br-a", "cookie=0x77/-1")
	removed := FlowChange{Kind: FlowRemoved, Table: 4, Cookie: cookie}
	if diff := cmp.Diff([]FlowChange{{Kind: FlowModified, Table: 4, Cookie: cookie}, removed}, log.take(t, removed)); diff != "" {
		t.Errorf("own bundles, then ovs-ofctl's modify and delete: (-want +got)\n%s", diff)
	}

	c.bulkMu.Lock()
	c.bulk.Close() // the link lost
	c.bulkMu.Unlock()
	lost := FlowChange{Kind: FlowsUnknown}
	if diff := cmp.Diff([]FlowChange{lost}, log.take(t, lost)); diff != "" {
		t.Errorf("the link lost: (-want +got)\n%s", diff)
	}
	if c.Watching() {
		t.Error("watching with the link lost")
	}
	if err := c.Commit(ctx, &Batch{FlowDeletes: []CookieMatch{{Cookie: own2.Cookie(), Mask: ^uint64(0)}}}, nil); err != nil {
		t.Fatal(err)
	}
	o.Ofctl("add-flow", "br-a", "table=4,cookie=0x77,priority=5,ip,actions=drop")
	if diff := cmp.Diff([]FlowChange{lost, foreign}, log.take(t, foreign)); diff != "" {
		t.Errorf("a new link, an own bundle, then ovs-ofctl's add: (-want +got)\n%s", diff)
	}
	if !c.Watching() {
		t.Error("the new link is not watched")
	}
}

// Updates the monitor does not understand, or a pause, say that changes
// may have gone unseen; an abbreviated own change says nothing.
func TestFlowUpdatesDecoded(t *testing.T) {
	full := func(event uint16) []byte {
		e := []byte{0, updateFullLen + 8, 0, byte(event), 9, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34}
		return append(e, 0, 1, 0, 4, 0, 0, 0, 0)
	}
	mp := func(entries ...[]byte) []byte {
		b := []byte{0, 16, 0, 0, 0, 0, 0, 0}
		for _, e := range entries {
			b = append(b, e...)
		}
		return b
	}
	unknown := FlowChange{Kind: FlowsUnknown}
	for _, tc := range []struct {
		name string
		body []byte
		want []FlowChange
	}{
		{"added, modified, removed", mp(full(1), full(3), full(2)), []FlowChange{{FlowAdded, 9, 0x1234}, {FlowModified, 9, 0x1234}, {FlowRemoved, 9, 0x1234}}},
		{"abbreviated", mp([]byte{0, 8, 0, 4, 0, 0, 0, 7}), nil},
		{"paused, resumed", mp([]byte{0, 8, 0, 5, 0, 0, 0, 0}, []byte{0, 8, 0, 6, 0, 0, 0, 0}), []FlowChange{unknown, unknown}},
		{"an unknown event", mp([]byte{0, 8, 0, 9, 0, 0, 0, 0}), []FlowChange{unknown}},
		{"a cut update", mp(full(1)[:20]), []FlowChange{unknown}},
		{"a short full update", mp(append([]byte{0, 8, 0, 1}, 0, 0, 0, 0)), []FlowChange{unknown}},
		{"no multipart header", []byte{0, 16}, []FlowChange{unknown}},
	} {
		var got []FlowChange
		watchUpdates(tc.body, func(ch FlowChange) { got = append(got, ch) })
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.name, diff)
		}
	}
}
