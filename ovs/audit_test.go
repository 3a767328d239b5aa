package ovs

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn/ofconntest"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
)

// The periodic audit (audit.go) on the in-memory dataplane.

// auditing runs hook (if any) at the stages of md's driver's audits, which
// let the driver's lock go after every entry they copy ("copying"); the
// channel hears each audit that handed its reads over.
func (md *memDriver) auditing(hook func(stage string)) (done chan struct{}) {
	done = make(chan struct{}, 4)
	defer md.lock()()
	md.d.audit.slice = 1
	md.d.audit.hook = func(stage string) {
		if hook != nil {
			hook(stage)
		}
		if stage == "done" {
			done <- struct{}{}
		}
	}
	return done
}

// resync hands what changed in the tracker to Driver.Resync, as the
// runner does for a periodic full sync.
func (md *memDriver) resync() {
	md.t.Helper()
	b := md.tr.Next(false)
	if err := md.taken(b, md.d.Resync(context.Background(), b.Delta)); err != nil {
		md.t.Fatal(err)
	}
}

// roundAsked waits until an audit handed its reads over (and asked for
// the round that adopts them).
func roundAsked(t *testing.T, rounds chan struct{}) {
	t.Helper()
	select {
	case <-rounds:
	case <-time.After(10 * time.Second):
		t.Fatal("the audit never asked for a round")
	}
}

// routed reports whether the host routes ip.
func (md *memDriver) routed(ip string) bool {
	a := netip.MustParseAddr(ip)
	for dst := range md.host.State().Routes {
		if dst.Contains(a) {
			return true
		}
	}
	return false
}

// A Resync sends what changed and leaves the read-back to the audit; the round the audit asks for repairs what it found: groups and
// flows deleted behind the driver's back, and the host's routes wiped.
func TestResyncRepairsDriftThroughAnAudit(t *testing.T) {
	md := newMemDriver(t, ofconntest.NewBridge(), memCluster())
	md.flows.metrics.register(metrics.NewKubeRegistry(), md.conn)
	md.mustSync()
	rounds := md.auditing(nil)
	groups := md.groupsOf("ns/web:http/TCP")
	if err := md.br.Apply(&ofconn.Batch{GroupDeletes: groups}); err != nil {
		t.Fatal(err)
	}
	st := md.host.State()
	if err := md.host.Sync(context.Background(), st.Config, nil, nil, st.NodePorts); err != nil {
		t.Fatal(err)
	}
	before := md.br.Counts()
	setEndpoints(md.tr, "sticky", "10.244.1.9", "10.244.1.98")
	md.resync()
	if got := mods(before, md.br.Counts()); got != (ofconntest.Counts{Bundles: 1, GroupMods: 1, FlowMods: 2}) {
		t.Fatalf("the resync itself sent %+v, want the change it was handed alone (one group mod, two DNAT flows), no repair", got)
	}
	before = md.br.Counts()
	roundAsked(t, rounds)
	if !md.routed("10.96.0.10") {
		t.Error("the audit did not bring the host's routes back")
	}
	md.mustApply()
	md.converged()
	sent := mods(before, md.br.Counts())
	if sent.GroupMods != len(groups) || sent.Bundles != 1 {
		t.Errorf("the audit's round sent %+v, want one bundle with the %d groups deleted behind the driver", sent, len(groups))
	}
	// The bridge deleted the flows that sent to the deleted group with it
	// (as OVS does): drift too, each added again.
	if v := readMetrics(t, md); v.GroupDrift != float64(len(groups)) || v.FlowDrift != float64(sent.FlowMods) || sent.FlowMods == 0 {
		t.Errorf("drift counted: %v flows, %v groups; want %d (the flows sent again) and %d", v.FlowDrift, v.GroupDrift, sent.FlowMods, len(groups))
	}
	if n, err := testutil.GetHistogramMetricCount(md.flows.metrics.audits.WithLabelValues("ok")); err != nil || n != 1 {
		t.Errorf("audits recorded: %d (%v), want 1", n, err)
	}
}

// What commits change while an audit copies the installed view or reads
// the bridge is not undone by what it read: flows and groups changed are
// not sent again, and a host change made while or after the audit copied
// the host's side is kept (the audit leaves the host alone, its round
// syncs it in full).
func TestAnAuditNeverUndoesWhatCommitsChangedMeanwhile(t *testing.T) {
	for _, stage := range []string{"copying", "read"} {
		t.Run("bridge, "+stage, func(t *testing.T) {
			md := auditedWithChange(t, stage, func(md *memDriver) {
				setEndpoints(md.tr, "web", "10.244.1.5", "10.244.1.99")
				setEndpoints(md.tr, "sticky", "10.244.1.9", "10.244.1.98")
				md.tr.DeleteService("ns", "empty")
			})
			before := md.br.Counts()
			md.mustApply()
			md.converged()
			if got := mods(before, md.br.Counts()); got != (ofconntest.Counts{}) {
				t.Fatalf("the audit's round sent %+v, want nothing: what it read was changed by a commit since", got)
			}
		})
	}
	for _, stage := range []string{"copying", "copied"} {
		t.Run("host, "+stage, func(t *testing.T) {
			md := auditedWithChange(t, stage, func(md *memDriver) { md.tr.DeleteService("ns", "web") })
			if md.routed("10.96.0.10") {
				t.Fatal("the deleted Service's route is back: the audit's host sync undid a commit")
			}
			md.mustApply()
			if md.routed("10.96.0.10") {
				t.Fatal("the deleted Service's route is back after the audit's round")
			}
			if !md.routed("10.96.0.11") {
				t.Fatal("another Service's route is gone")
			}
		})
	}
}

// auditedWithChange syncs the in-memory cluster, resyncs, and commits
// change once the audit reaches stage the first time; it returns once the
// audit has asked for the round that adopts it.
func auditedWithChange(t *testing.T, stage string, change func(md *memDriver)) *memDriver {
	md := newMemDriver(t, ofconntest.NewBridge(), memCluster())
	md.mustSync()
	changed := false
	rounds := md.auditing(func(at string) {
		if at == stage && !changed {
			changed = true
			change(md)
			md.mustApply()
		}
	})
	md.resync()
	roundAsked(t, rounds)
	return md
}

// An audit looks the flows it expects up by cookie and counts the
// bridge's pipeline flows once; only when the count says the bridge holds
// others does it read every flow (OVS visits every flow for each slice
// of that read). Whatever it found, the round after it leaves the bridge
// as the driver wants it.
func TestAuditLooksFlowsUpAndScansOnlyForStrays(t *testing.T) {
	stray := &of.Flow{Table: 0, Priority: 7, Goto: -1, Match: []of.Match{of.InPort(77)}}
	for _, tc := range []struct {
		name string
		// behind changes the bridge behind the driver's back; meanwhile
		// runs between the audit's lookups and its count; whileCounting
		// as OVS counts (a count it overlaps is taken again: counts).
		behind        func(md *memDriver)
		meanwhile     func(md *memDriver)
		whileCounting func(md *memDriver)
		counts        int
		scans         bool
		repair        ofconntest.Counts
	}{
		{name: "nothing drifted"},
		{name: "a flow deleted", behind: func(md *memDriver) {
			c := md.d.model.State().DesiredFlows()[0]
			md.applyBehind(&ofconn.Batch{FlowDeletes: []ofconn.CookieMatch{{Cookie: c, Mask: ^uint64(0)}}})
		}, repair: ofconntest.Counts{Bundles: 1, FlowMods: 1}},
		{name: "a stray flow with the driver's tag", behind: func(md *memDriver) {
			md.applyBehind(&ofconn.Batch{FlowAdds: []*of.Flow{stray}})
		}, scans: true, repair: ofconntest.Counts{Bundles: 1, FlowMods: 1}},
		{name: "commits between the lookups and the count", meanwhile: func(md *memDriver) {
			md.tr.DeleteService("ns", "empty")
			for i, name := range []string{"late", "later"} {
				md.tr.UpsertService(object.ServiceOf(Service("ns", name, ClusterIPs(fmt.Sprintf("10.96.0.%d", 16+i)), Port("http", memTCP, 80, 0))))
			}
			md.mustApply()
		}},
		{name: "a commit while OVS counts", whileCounting: func(md *memDriver) {
			md.tr.UpsertService(object.ServiceOf(Service("ns", "counted", ClusterIPs("10.96.0.20"), Port("http", memTCP, 80, 0))))
			md.mustApply()
		}, counts: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := newMemDriver(t, ofconntest.NewBridge(), memCluster())
			md.mustSync()
			want := md.br.Dump()
			rounds := md.auditing(func(stage string) {
				if stage == "looked up" && tc.meanwhile != nil {
					tc.meanwhile(md)
					want = md.br.Dump()
				}
				if stage == "looked up" && tc.whileCounting != nil {
					md.br.BeforeNextCount(func() {
						done := make(chan struct{})
						go func() { tc.whileCounting(md); close(done) }()
						select {
						case <-done:
							want = md.br.Dump()
						case <-time.After(2 * time.Second):
							t.Error("a change waited for the audit's count")
						}
					})
				}
			})
			if tc.behind != nil {
				tc.behind(md)
			}
			reads := md.br.Reads()
			md.resync()
			roundAsked(t, rounds)
			got := md.br.Reads()
			if got.Aggregates-reads.Aggregates != max(tc.counts, 1) || (got.FlowScans > reads.FlowScans) != tc.scans || got.FlowLookups == reads.FlowLookups {
				t.Errorf("the audit read %+v after %+v; want lookups, %d counts, and scans: %v", got, reads, max(tc.counts, 1), tc.scans)
			}
			before := md.br.Counts()
			md.mustApply()
			md.converged()
			if sent := mods(before, md.br.Counts()); sent != tc.repair {
				t.Errorf("the audit's round sent %+v, want %+v", sent, tc.repair)
			}
			if diff := cmp.Diff(want, md.br.Dump()); diff != "" {
				t.Errorf("the bridge after the audit's round (-want +got):\n%s", diff)
			}
		})
	}
}

// applyBehind changes the bridge as another controller would.
func (md *memDriver) applyBehind(b *ofconn.Batch) {
	md.t.Helper()
	if err := md.br.Apply(b); err != nil {
		md.t.Fatal(err)
	}
}

// An audit starts only when the last one ended at least auditIdle times
// as long ago as it took; a resync meanwhile commits its change all the
// same.
func TestAuditsKeepToAShareOfTheTime(t *testing.T) {
	md := newMemDriver(t, ofconntest.NewBridge(), memCluster())
	md.mustSync()
	var began atomic.Int32
	rounds := md.auditing(func(stage string) {
		if stage == "begin" {
			began.Add(1)
		}
	})
	md.resync()
	roundAsked(t, rounds)
	md.mustApply() // adopts it
	setLast := func(ended time.Time, took time.Duration) {
		defer md.lock()()
		md.d.audit.ended, md.d.audit.took = ended, took
	}
	setLast(time.Now(), time.Hour) // as if the last one took an hour and just ended

	before := md.br.Counts()
	setEndpoints(md.tr, "sticky", "10.244.1.9", "10.244.1.98")
	md.resync()
	if got := mods(before, md.br.Counts()); got.Bundles != 1 || got.FlowMods == 0 {
		t.Errorf("a resync while audits wait sent %+v, want its change in one bundle", got)
	}
	func() {
		defer md.lock()()
		if md.d.audit.running || md.d.audit.result != nil || began.Load() != 1 {
			t.Errorf("an audit started %v after one that took %v ended (running %v, audits begun %d)",
				time.Since(md.d.audit.ended).Round(time.Second), md.d.audit.took, md.d.audit.running, began.Load())
		}
	}()

	setLast(time.Now().Add(-auditIdle*time.Hour), time.Hour)
	md.resync()
	roundAsked(t, rounds)
	if n := began.Load(); n != 2 {
		t.Errorf("audits begun: %d, want a second once the last ended %d times as long ago as it took", n, auditIdle)
	}
}
