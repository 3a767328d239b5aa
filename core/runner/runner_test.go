package runner

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"
)

func TestStartupFullSyncThenBatchedDeltas(t *testing.T) {
	h := newHarness(t)
	if c := h.next(); !c.full || h.offset(c) != 0 {
		t.Fatalf("first call %+v, want an immediate full sync", c)
	}
	h.idle()
	h.tr.UpsertService(object.ServiceOf(svc("a", "10.96.0.1")))
	h.tr.UpsertService(object.ServiceOf(svc("b", "10.96.0.2")))
	h.none() // within min-sync-period of the last sync: wait
	h.step(time.Second)
	c := h.next()
	if c.full || strings.Join(c.ports, " ") != "+a +b" || h.offset(c) != time.Second {
		t.Fatalf("call %+v, want one batched delta at 1s", c)
	}
	// Nothing pending: the next call is the periodic full sync, 30s after
	// the previous full one.
	h.step(28 * time.Second)
	h.none()
	h.step(time.Second)
	if c := h.next(); !c.full || h.offset(c) != 30*time.Second || strings.Join(c.ports, " ") != "a b" {
		t.Fatalf("call %+v, want the periodic full sync at 30s", c)
	}
}

// --min-sync-period=0 is no minimum, as upstream's: a change is applied
// as soon as it arrives, without the clock moving.
func TestZeroMinSyncPeriodAppliesAtOnce(t *testing.T) {
	h := newHarnessWith(t, 0)
	if c := h.next(); !c.full {
		t.Fatalf("first call %+v, want a full sync", c)
	}
	for i, name := range []string{"a", "b"} {
		h.idle()
		h.tr.UpsertService(object.ServiceOf(svc(name, fmt.Sprintf("10.96.0.%d", i+1))))
		if c := h.next(); c.full || strings.Join(c.ports, " ") != "+"+name || h.offset(c) != 0 {
			t.Fatalf("call %+v, want the delta +%s at once", c, name)
		}
	}
}

func TestFailedApplyBacksOffAndRetriesEverything(t *testing.T) {
	h := newHarness(t)
	h.next()
	h.app.mu.Lock()
	h.app.fail = 3
	h.app.mu.Unlock()
	h.idle()
	h.tr.UpsertService(object.ServiceOf(svc("a", "10.96.0.1")))
	h.step(time.Second)
	if c := h.next(); strings.Join(c.ports, " ") != "+a" {
		t.Fatalf("first attempt %+v", c)
	}
	// Retries at +1s, +2s, +4s after each failure; a change made in between
	// rides along with the retry.
	h.step(time.Second)
	if c := h.next(); h.offset(c) != 2*time.Second {
		t.Fatalf("retry 1 at %v", h.offset(c))
	}
	h.idle()
	h.tr.UpsertService(object.ServiceOf(svc("b", "10.96.0.2")))
	h.step(time.Second) // a new change does not cut the backoff short
	h.none()
	h.step(time.Second)
	if c := h.next(); h.offset(c) != 4*time.Second || strings.Join(c.ports, " ") != "+a +b" {
		t.Fatalf("retry 2 %+v at %v", c, h.offset(c))
	}
	h.idle()
	if st := h.run.Status(); st.Failures != 3 || st.QueuedSince.IsZero() {
		t.Fatalf("status %+v", st)
	}
	h.step(4 * time.Second)
	if c := h.next(); h.offset(c) != 8*time.Second || strings.Join(c.ports, " ") != "+a +b" {
		t.Fatalf("retry 3 %+v", c)
	}
	h.idle()
	if st := h.run.Status(); st.Failures != 0 || !st.QueuedSince.IsZero() || st.LastError != nil {
		t.Fatalf("status after success %+v", st)
	}
}

func TestFailedFullSyncIsRetriedAsFull(t *testing.T) {
	h := newHarnessWith(t, time.Second, func(f *fakeApplier) { f.fail = 1 })
	if c := h.next(); !c.full {
		t.Fatal("want full")
	}
	h.none() // the retry waits for the backoff
	h.step(time.Second)
	if c := h.next(); !c.full || h.offset(c) != time.Second {
		t.Fatalf("retry %+v at %v, want a full sync after 1s", c, h.offset(c))
	}
	h.step(2 * time.Second)
	h.none() // success: the next full sync is a sync period away
}

func TestDriverPanicIsAnError(t *testing.T) {
	h := newHarness(t)
	h.next()
	h.app.mu.Lock()
	h.app.panic = true
	h.app.mu.Unlock()
	h.idle()
	h.tr.UpsertService(object.ServiceOf(svc("a", "10.96.0.1")))
	h.step(time.Second)
	h.next()
	h.idle()
	h.res.mu.Lock()
	last := h.res.list[len(h.res.list)-1]
	h.res.mu.Unlock()
	if last.Err == nil || !strings.Contains(last.Err.Error(), "driver panicked: boom") {
		t.Fatalf("result %+v", last)
	}
	h.step(time.Second)
	if c := h.next(); strings.Join(c.ports, " ") != "+a" {
		t.Fatalf("retry after panic %+v", c)
	}
}

func TestRunOnce(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	app := &fakeApplier{clock: clk, calls: make(chan call, 4)}
	tr := tracker.New(tracker.Options{NodeName: "n"})
	tr.UpsertService(object.ServiceOf(svc("a", "10.96.0.1")))
	r := New(tr, app, Config{Clock: clk}, nil)
	if err := r.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := <-app.calls; !c.full || len(c.ports) != 1 {
		t.Fatalf("call %+v", c)
	}
	if tr.HasPending() {
		t.Fatal("RunOnce did not commit")
	}
}

// triggeringApplier is a driver during whose sync a change arrives that
// the sync's batch already carries (its trigger comes late).
type triggeringApplier struct{ run *Runner }

func (a *triggeringApplier) Sync(context.Context, graph.Snapshot) error { a.run.Trigger(); return nil }
func (a *triggeringApplier) Apply(context.Context, graph.Delta) error   { a.run.Trigger(); return nil }

// A trigger whose change an attempt already applied does not leave the
// runner reporting a change waiting (health would show it queued, and
// /healthz fail, until the next full sync).
func TestLateTriggerOfAnAppliedChangeIsNotQueued(t *testing.T) {
	tr := tracker.New(tracker.Options{NodeName: "node-1"})
	tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", v1.ProtocolTCP, 80, 8080))))
	a := &triggeringApplier{}
	r := New(tr, a, Config{}, nil)
	a.run = r
	if err := r.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := r.Status(); !st.QueuedSince.IsZero() {
		t.Fatalf("nothing is pending, yet a change is reported queued since %v", st.QueuedSince)
	}
	// A change that is really pending stays queued.
	tr.UpsertService(object.ServiceOf(Service("ns", "api", ClusterIPs("10.96.0.11"), Port("http", v1.ProtocolTCP, 80, 8080))))
	r.Trigger()
	if st := r.Status(); st.QueuedSince.IsZero() {
		t.Fatal("a pending change is not reported queued")
	}
}

// A Partial is a success for everything but what it holds back: the
// batch is not handed again, the proxy is healthy with those parts shown
// as degraded, and the applier is called again, with an empty delta, when
// it asked; a change in between goes at once, without waiting for that.
func TestPartialIsAppliedAndRetriedWhenAsked(t *testing.T) {
	h := newHarness(t)
	h.next()
	h.app.mu.Lock()
	h.app.hold, h.app.retryIn = []string{"ns/a:http/TCP: OVSRefused: too large"}, 5*time.Second
	h.app.mu.Unlock()
	h.idle()
	h.tr.UpsertService(object.ServiceOf(svc("a", "10.96.0.1")))
	h.step(time.Second)
	if c := h.next(); strings.Join(c.ports, " ") != "+a" {
		t.Fatalf("first attempt %+v", c)
	}
	h.idle()
	st := h.run.Status()
	if st.Failures != 0 || !st.QueuedSince.IsZero() || st.LastError != nil || len(st.Degraded) != 1 {
		t.Fatalf("status after a partial %+v, want healthy with one part degraded", st)
	}
	// A change in between is applied at once (min-sync-period after the
	// last call), not held to the retry.
	h.tr.UpsertService(object.ServiceOf(svc("b", "10.96.0.2")))
	h.step(time.Second)
	if c := h.next(); strings.Join(c.ports, " ") != "+b" || h.offset(c) != 2*time.Second {
		t.Fatalf("call %+v at %v, want +b alone at 2s", c, h.offset(c))
	}
	// Asked again 5 s after that call: with nothing changed, an empty delta.
	h.app.mu.Lock()
	h.app.hold = nil
	h.app.mu.Unlock()
	h.step(4 * time.Second)
	h.none()
	h.step(time.Second)
	if c := h.next(); c.full || len(c.ports) != 0 || h.offset(c) != 7*time.Second {
		t.Fatalf("call %+v at %v, want an empty delta at 7s", c, h.offset(c))
	}
	h.idle()
	if st := h.run.Status(); len(st.Degraded) != 0 {
		t.Fatalf("status after the retry succeeded %+v, want nothing degraded", st)
	}
	h.step(10 * time.Second)
	h.none() // not asked again: nothing until the full sync
	h.res.mu.Lock()
	defer h.res.mu.Unlock()
	if r := h.res.list[1]; r.Err != nil || len(r.Degraded) != 1 {
		t.Fatalf("the partial attempt's result %+v, want a success with one part degraded", r)
	}
}

// RunOnce (switchyard run --once) fails when the applier held parts
// back: nothing would try them again.
func TestRunOnceFailsOnWhatIsHeldBack(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	app := &fakeApplier{clock: clock, calls: make(chan call, 4), hold: []string{"ns/a:http/TCP: OVSRefused: too large"}}
	r := New(tracker.New(tracker.Options{NodeName: "n", Now: clock.Now}), app, Config{Clock: clock}, nil)
	if err := r.RunOnce(context.Background()); err == nil || !strings.Contains(err.Error(), "ns/a:http/TCP") {
		t.Fatalf("RunOnce: %v, want an error naming what is held back", err)
	}
	app.hold = nil
	if err := r.RunOnce(context.Background()); err != nil {
		t.Fatalf("RunOnce with nothing held back: %v", err)
	}
}

// A round the applier requests (a pod's port, a reconnection) is an
// attempt like a change's: after the min-sync period, an empty delta when
// nothing changed, asked again after the backoff when it fails, and
// merged with a change that is pending.
func TestRequestedRound(t *testing.T) {
	h := newHarness(t)
	h.next()
	h.idle()
	h.run.Request()
	h.none() // within min-sync-period of the last sync: wait
	h.step(time.Second)
	if c := h.next(); c.full || len(c.ports) != 0 || h.offset(c) != time.Second {
		t.Fatalf("call %+v at %v, want an empty delta at 1s", c, h.offset(c))
	}

	// A failed round is asked again after the backoff.
	h.app.mu.Lock()
	h.app.fail = 1
	h.app.mu.Unlock()
	h.idle()
	h.run.Request()
	h.step(time.Second)
	if c := h.next(); c.full || len(c.ports) != 0 || h.offset(c) != 2*time.Second {
		t.Fatalf("call %+v at %v, want an empty delta at 2s", c, h.offset(c))
	}
	h.none() // the backoff
	h.step(time.Second)
	if c := h.next(); c.full || len(c.ports) != 0 || h.offset(c) != 3*time.Second {
		t.Fatalf("call %+v at %v, want the failed round again at 3s", c, h.offset(c))
	}

	// A request while a change is pending: one call carries the change.
	h.idle()
	h.tr.UpsertService(object.ServiceOf(svc("a", "10.96.0.1")))
	h.run.Request()
	h.step(time.Second)
	if c := h.next(); c.full || strings.Join(c.ports, " ") != "+a" || h.offset(c) != 4*time.Second {
		t.Fatalf("call %+v at %v, want +a at 4s", c, h.offset(c))
	}
	h.step(10 * time.Second)
	h.none() // nothing asked: nothing until the full sync
	h.idle()
	if st := h.run.Status(); st.Failures != 0 || st.LastError != nil || !st.QueuedSince.IsZero() {
		t.Fatalf("status %+v, want healthy", st)
	}
}

// A Resyncer's periodic full syncs are Resyncs; the first full sync, and
// a full sync retried after a failure, are Syncs.
func TestPeriodicFullSyncsAreResyncs(t *testing.T) {
	h := newHarnessWith(t, time.Second, func(f *fakeApplier) { f.resyncs = true })
	kinds := func(c call) string {
		switch {
		case c.resync:
			return "resync"
		case c.full:
			return "sync"
		}
		return "apply"
	}
	if c := h.next(); kinds(c) != "sync" {
		t.Fatalf("the first call is a %s, want a sync", kinds(c))
	}
	h.step(30 * time.Second)
	if c := h.next(); kinds(c) != "resync" {
		t.Fatalf("the periodic full sync is a %s, want a resync", kinds(c))
	}
	h.app.mu.Lock()
	h.app.fail = 1
	h.app.mu.Unlock()
	h.step(30 * time.Second)
	if c := h.next(); kinds(c) != "resync" {
		t.Fatalf("the second periodic full sync is a %s, want a resync", kinds(c))
	}
	h.step(time.Second)
	if c := h.next(); kinds(c) != "sync" {
		t.Fatalf("the retry of a failed resync is a %s, want a sync", kinds(c))
	}
	h.step(30 * time.Second)
	if c := h.next(); kinds(c) != "resync" {
		t.Fatalf("the periodic full sync after the retry is a %s, want a resync", kinds(c))
	}
}
