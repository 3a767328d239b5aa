package ovs

import (
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn/ofconntest"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// A flow replaced by one with the same match (here a frontend whose
// endpoints went: its group action becomes a reject) needs no delete: the
// add replaces it, in one bundle with the group's delete. After a restart
// the old flow's match is not known and its delete is sent; the bridge
// ends the same.
func TestReplacedFlowNeedsNoDelete(t *testing.T) {
	br := ofconntest.NewBridge()
	md := newMemDriver(t, br, memCluster())
	md.mustSync()
	before := br.Counts()
	batchOf := func(md *memDriver) *ofconn.Batch {
		setEndpoints(md.tr, "web")
		b := md.tr.Next(false)
		defer md.lock()()
		md.m.Apply(b.Delta)
		return md.m.State().Pending(engine.All)
	}
	b := batchOf(md)
	if len(b.FlowAdds) != 1 || len(b.FlowDeletes) != 0 || len(b.GroupDeletes) != 1 {
		t.Fatalf("batch: %d flow adds, %d flow deletes, %d group deletes; want 1, 0, 1", len(b.FlowAdds), len(b.FlowDeletes), len(b.GroupDeletes))
	}
	if err := md.conn.Commit(t.Context(), b, nil); err != nil {
		t.Fatal(err)
	}
	unlock := md.lock()
	md.m.State().Committed(engine.All)
	unlock()
	md.converged()
	if got := mods(before, br.Counts()); got != (ofconntest.Counts{Bundles: 1, FlowMods: 1, GroupMods: 1}) {
		t.Fatalf("sent %+v", got)
	}

	// A flow with that match but other actions (as an older switchyard
	// might have left) is found at start: its match is not known, so its
	// delete is sent with the add that replaces it; the bridge ends the
	// same.
	br2 := ofconntest.NewBridge()
	newMemDriver(t, br2, memCluster()).mustSync()
	var old *of.Flow
	unlock = md.lock()
	for _, c := range md.m.State().DesiredFlows() {
		if f := md.m.State().FlowOf(c, nil); strings.Contains(f.Text(), "nw_dst=10.96.0.10,") && f.Table == 6 {
			old = &of.Flow{Table: f.Table, Priority: f.Priority, Match: f.Match, Goto: -1, Actions: []of.Action{of.Output(9)}}
		}
	}
	unlock()
	if err := br2.Apply(&ofconn.Batch{FlowAdds: []*of.Flow{old}}); err != nil {
		t.Fatal(err)
	}
	md2 := newMemDriver(t, br2, memCluster())
	setEndpoints(md2.tr, "web")
	before = br2.Counts()
	md2.mustSync()
	md2.converged()
	if got := mods(before, br2.Counts()); got != (ofconntest.Counts{Bundles: 1, FlowMods: 2, GroupMods: 1}) {
		t.Fatalf("after a restart: sent %+v, want one bundle: the add, the old flow's delete, the group's delete", got)
	}
}

// Two Services claiming one frontend want two flows with one match; OVS
// holds one. The lower cookie's is installed, the other is reported
// (FrontendConflict) and stays out across resyncs; when the first Service
// goes, the other's flow replaces its flow in one bundle.
func TestShadowedFrontendIsInstalledWhenTheOtherGoes(t *testing.T) {
	tr := memCluster()
	tr.UpsertService(object.ServiceOf(Service("ns", "twin", ClusterIPs("10.96.0.10"), Port("http", memTCP, 80, 0))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "twin-1", "twin", memV4, SlicePort("http", memTCP, 8080), onNode("node-1", "10.244.1.50"))))
	md := newMemDriver(t, ofconntest.NewBridge(), tr)
	md.mustSync()
	md.converged()
	unlock := md.lock()
	shadowed := md.m.State().Shadowed()
	var loser, winner graph.ServicePortName
	for c, w := range shadowed {
		loser, _ = md.m.ServicePortOf(c)
		winner, _ = md.m.ServicePortOf(w)
	}
	unlock()
	if len(shadowed) != 1 {
		t.Fatalf("shadowed %v, want one flow", shadowed)
	}
	if got := md.sink.reasons(); !slices.Equal(got, []string{"FrontendConflict " + loser.String()}) {
		t.Fatalf("reported %v, want a FrontendConflict of %s", got, loser)
	}
	before := md.br.Counts()
	md.mustSync()
	if got := mods(before, md.br.Counts()); got != (ofconntest.Counts{}) {
		t.Fatalf("a resync sent %+v, want nothing", got)
	}
	md.tr.DeleteService(winner.Namespace, winner.Name)
	md.mustApply()
	md.converged()
	defer md.lock()()
	if len(md.m.State().Shadowed()) != 0 {
		t.Fatalf("still shadowed: %v", md.m.State().Shadowed())
	}
}

// A flow whose cookie (a 44-bit hash) is another flow's is left out and
// reported (FlowCookieCollision) on its Service; the other flow stays
// installed, and resyncs change nothing.
func TestCookieCollisionIsReportedAndStable(t *testing.T) {
	// The frontend flows of two Services, found in a first model.
	probe := newMemDriver(t, ofconntest.NewBridge(), memCluster())
	probe.mustSync()
	frontend := func(ip string) uint64 {
		defer probe.lock()()
		for _, c := range probe.m.State().DesiredFlows() {
			if f := probe.m.State().FlowOf(c, nil); strings.Contains(f.Text(), "nw_dst="+ip+",") && f.Table == 6 {
				return c
			}
		}
		t.Fatalf("no frontend flow for %s", ip)
		return 0
	}
	// ns/empty's flow comes first (service ports are set in name order):
	// it is kept, and ns/web's, forced onto its cookie, is lost.
	kept, lost := frontend("10.96.0.14"), frontend("10.96.0.10")

	md := newMemDriver(t, ofconntest.NewBridge(), memCluster())
	unlock := md.lock()
	md.m.ForceCookies(func(f *of.Flow) uint64 {
		if c := f.Cookie(); c != lost {
			return c
		}
		return kept
	})
	unlock()
	md.mustSync()
	md.converged()
	if dump := md.br.Dump(); strings.Contains(dump, "nw_dst=10.96.0.10,") || !strings.Contains(dump, "nw_dst=10.96.0.14,") {
		t.Fatalf("the bridge holds:\n%s\nwant ns/empty's frontend and not ns/web's", dump)
	}
	if got := md.sink.reasons(); !slices.Equal(got, []string{"FlowCookieCollision ns/web:http/TCP"}) {
		t.Fatalf("reported %v, want a FlowCookieCollision of ns/web", got)
	}
	before := md.br.Counts()
	md.mustSync()
	md.mustApply()
	if got := mods(before, md.br.Counts()); got != (ofconntest.Counts{}) {
		t.Fatalf("resyncs sent %+v, want nothing", got)
	}
}
