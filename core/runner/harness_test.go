package runner

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// call is one driver call the fake applier saw.
type call struct {
	full   bool
	resync bool     // Resync (Resyncer) rather than Sync
	ports  []string // service ports in the snapshot, or touched by the delta
	at     time.Time
}

type fakeApplier struct {
	clock *testingclock.FakeClock
	calls chan call
	mu    sync.Mutex
	fail  int  // fail this many calls
	panic bool // panic on the next call
	// hold: the next calls hold this back, retrying after retryIn (a
	// Partial); empty: nothing held.
	hold    []string
	retryIn time.Duration
	// resyncs: the runner is handed a Resyncer (resyncingApplier).
	resyncs bool
}

// resyncingApplier is the fake applier as a Resyncer.
type resyncingApplier struct{ *fakeApplier }

func (f resyncingApplier) Resync(_ context.Context, d graph.Delta) error {
	var p []string
	for _, sp := range d.Added {
		p = append(p, "+"+sp.Name.Name)
	}
	f.mu.Lock()
	doPanic, err := f.outcomeLocked()
	f.mu.Unlock()
	f.calls <- call{full: true, resync: true, ports: p, at: f.clock.Now()}
	if doPanic {
		panic("boom")
	}
	return err
}

// held is a Partial.
type held struct {
	lines []string
	at    time.Time
}

func (h *held) Error() string      { return "held back: " + strings.Join(h.lines, ", ") }
func (h *held) RetryAt() time.Time { return h.at }
func (h *held) Held() []string     { return h.lines }

// record decides the call's outcome before it reports the call, so a test
// that changes the outcome after next() changes only the calls after it.
func (f *fakeApplier) record(full bool, ports []string) error {
	f.mu.Lock()
	doPanic, err := f.outcomeLocked()
	f.mu.Unlock()
	f.calls <- call{full: full, ports: ports, at: f.clock.Now()}
	if doPanic {
		panic("boom")
	}
	return err
}

func (f *fakeApplier) outcomeLocked() (doPanic bool, err error) {
	switch {
	case f.panic:
		f.panic = false
		return true, nil
	case f.fail > 0:
		f.fail--
		return false, errors.New("dataplane unavailable")
	case len(f.hold) > 0:
		return false, &held{f.hold, f.clock.Now().Add(f.retryIn)}
	}
	return false, nil
}

func (f *fakeApplier) Sync(_ context.Context, s graph.Snapshot) error {
	var p []string
	for _, sp := range s.ServicePorts {
		p = append(p, sp.Name.Name)
	}
	return f.record(true, p)
}

func (f *fakeApplier) Apply(_ context.Context, d graph.Delta) error {
	var p []string
	for _, sp := range d.Added {
		p = append(p, "+"+sp.Name.Name)
	}
	for _, u := range d.Updated {
		p = append(p, "~"+u.New.Name.Name)
	}
	for _, sp := range d.Removed {
		p = append(p, "-"+sp.Name.Name)
	}
	return f.record(false, p)
}

type results struct {
	mu   sync.Mutex
	list []Result
}

func (r *results) Synced(x Result) { r.mu.Lock(); r.list = append(r.list, x); r.mu.Unlock() }

type harness struct {
	t     *testing.T
	clock *testingclock.FakeClock
	tr    *tracker.Tracker
	app   *fakeApplier
	run   *Runner
	res   *results
	start time.Time
}

func newHarness(t *testing.T) *harness { return newHarnessWith(t, time.Second) }

// newHarnessWith starts a runner; prepare sets the fake applier up before
// the runner's first call.
func newHarnessWith(t *testing.T, minSyncPeriod time.Duration, prepare ...func(*fakeApplier)) *harness {
	start := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	h := &harness{t: t, clock: testingclock.NewFakeClock(start), res: &results{}, start: start}
	h.app = &fakeApplier{clock: h.clock, calls: make(chan call, 16)}
	for _, p := range prepare {
		p(h.app)
	}
	h.tr = tracker.New(tracker.Options{NodeName: "n", Now: h.clock.Now})
	var app Applier = h.app
	if h.app.resyncs {
		app = resyncingApplier{h.app}
	}
	run := New(h.tr, app, Config{MinSyncPeriod: minSyncPeriod, SyncPeriod: 30 * time.Second,
		BackoffInitial: time.Second, BackoffMax: 8 * time.Second, Clock: h.clock}, h.res)
	h.run = run
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { run.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

// next waits for the next driver call.
func (h *harness) next() call {
	h.t.Helper()
	select {
	case c := <-h.app.calls:
		return c
	case <-time.After(5 * time.Second):
		h.t.Fatal("no driver call")
	}
	return call{}
}

// none asserts that no driver call happens while the runner idles.
func (h *harness) none() {
	h.t.Helper()
	h.idle()
	select {
	case c := <-h.app.calls:
		h.t.Fatalf("unexpected driver call %+v", c)
	default:
	}
}

// idle waits until the runner is blocked on its timer.
func (h *harness) idle() {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !h.clock.HasWaiters() {
		if time.Now().After(deadline) {
			h.t.Fatal("runner never went idle")
		}
		time.Sleep(time.Millisecond)
	}
}

// step moves the fake clock once the runner waits on it.
func (h *harness) step(d time.Duration) {
	h.t.Helper()
	h.idle()
	h.clock.Step(d)
}

func svc(name, ip string) *v1.Service {
	return Service("ns", name, ClusterIPs(ip), Port("http", v1.ProtocolTCP, 80, 0))
}

func (h *harness) offset(c call) time.Duration { return c.at.Sub(h.start) }
