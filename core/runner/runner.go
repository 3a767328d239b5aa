// Package runner drives a dataplane from the tracker: a full sync at start
// and every SyncPeriod, deltas batched at most every MinSyncPeriod, and
// failed applies retried with exponential backoff. Like upstream's
// BoundedFrequencyRunner, but a retry is a fresh batch from the tracker, so
// it carries everything still pending, merged with what changed meanwhile.
package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"k8s.io/utils/clock"
)

// Applier is the part of a driver the runner calls.
type Applier interface {
	// Sync makes the dataplane hold exactly the snapshot.
	Sync(ctx context.Context, snapshot graph.Snapshot) error
	// Apply changes the dataplane by a delta.
	Apply(ctx context.Context, delta graph.Delta) error
}

// Resyncer is an Applier whose periodic full syncs need no snapshot: it
// keeps what the graph holds from the batches it took, and checks what
// its dataplane holds against that off the change path
// (dataplanes.Auditor). For a full sync due by SyncPeriod after one that
// succeeded, the runner hands it what changed since the last batch (the
// delta may be empty) through Resync instead of building the whole graph
// for Sync: a change never waits for O(cluster) work. The first full sync,
// and one retried after a failure, are Syncs.
type Resyncer interface {
	Resync(ctx context.Context, delta graph.Delta) error
}

// Config times the runner.
type Config struct {
	MinSyncPeriod  time.Duration // zero: no minimum (upstream's --min-sync-period=0)
	SyncPeriod     time.Duration // default 30s
	BackoffInitial time.Duration // default 1s
	BackoffMax     time.Duration // default SyncPeriod
	Clock          clock.Clock   // default the real clock
}

func (c *Config) complete() {
	if c.MinSyncPeriod < 0 {
		c.MinSyncPeriod = 0
	}
	if c.SyncPeriod <= 0 {
		c.SyncPeriod = 30 * time.Second
	}
	if c.BackoffInitial <= 0 {
		c.BackoffInitial = time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = c.SyncPeriod
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
}

// Result describes one sync attempt.
type Result struct {
	Full      bool
	Started   time.Time
	Duration  time.Duration
	Err       error
	Changed   int         // service ports in the delta (all of them for a full sync)
	ChangedAt []time.Time // when the changes behind this batch happened (set on success)
	// Degraded is what the applier held back (Err is then nil: the
	// attempt succeeded for everything else).
	Degraded []string
}

// Partial is an error an applier returns when it applied the batch but
// for parts it holds back and tries again by itself (a service port the
// dataplane refused): the batch counts as applied, so nothing else waits
// for those parts and the proxy stays healthy; they show as degraded in
// the status; and the applier is called again at RetryAt (with an empty
// delta when nothing changed), or at the next full sync if RetryAt is
// zero. dataplanes.Degraded is one.
type Partial interface {
	error
	RetryAt() time.Time
	// Held says what is held back, one line each.
	Held() []string
}

// Observer hears about every sync attempt (for logs, metrics, health).
type Observer interface {
	Synced(Result)
}

// Status is the runner's health as upstream's /healthz judges it.
type Status struct {
	// QueuedSince is when the oldest change not yet applied was queued; zero
	// when everything is applied.
	QueuedSince time.Time
	LastSuccess time.Time
	LastError   error
	Failures    int // consecutive failed attempts
	// Degraded is what the applier held back at its last successful
	// attempt (runner.Partial), one line each.
	Degraded []string
	// AttemptSince is when the attempt under way started; zero between
	// attempts. An old one means the loop is stuck in the driver.
	AttemptSince time.Time
}

// Runner is the sync loop.
type Runner struct {
	cfg     Config
	tracker *tracker.Tracker
	applier Applier
	obs     Observer
	kick    chan struct{}

	mu       sync.Mutex
	queued   time.Time // oldest trigger not yet taken by an attempt
	inFlight time.Time // queued time taken by the running attempt
	status   Status
	// retryAt is when the applier asked to be called again for what it
	// holds back (zero: not asked). Read and written by attempt only: the
	// loop's, or RunOnce's when there is no loop.
	retryAt time.Time
	// requested: the applier asked for a round (Request) that no attempt
	// has taken yet, or whose attempt failed.
	requested bool
}

// New returns a runner of the tracker's batches; it subscribes to the
// tracker's changes (Tracker.OnChange).
func New(t *tracker.Tracker, a Applier, cfg Config, obs Observer) *Runner {
	cfg.complete()
	r := &Runner{cfg: cfg, tracker: t, applier: a, obs: obs, kick: make(chan struct{}, 1)}
	t.OnChange(r.Trigger)
	return r
}

// Trigger asks for a sync soon; it never blocks.
func (r *Runner) Trigger() {
	r.mu.Lock()
	if r.queued.IsZero() {
		r.queued = r.cfg.Clock.Now()
	}
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Request asks for a round soon even if nothing changed: the applier is
// called (Apply, with an empty delta when the tracker has nothing) after
// the min-sync period since the last attempt, or after the backoff while
// attempts fail, like a change the tracker heard; a round whose attempt
// fails is asked again. A driver calls it for what it hears from its
// dataplane (a pod's port, a reconnection) so that every commit goes
// through the runner: one path, one backoff, one set of metrics. It never
// blocks.
func (r *Runner) Request() {
	r.mu.Lock()
	r.requested = true
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// takeRequest returns whether a round was requested, and clears it.
func (r *Runner) takeRequest() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := r.requested
	r.requested = false
	return was
}

// Status returns the current health.
func (r *Runner) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.status
	s.QueuedSince = earliest(r.queued, r.inFlight)
	return s
}

// RunOnce performs one full sync. What the applier holds back is an
// error here: nothing will try it again.
func (r *Runner) RunOnce(ctx context.Context) error {
	r.Trigger()
	if err := r.attempt(ctx, true, false, false); err != nil {
		return err
	}
	if held := r.Status().Degraded; len(held) > 0 {
		return fmt.Errorf("programmed all but %d part(s), held back: %s", len(held), strings.Join(held[:min(len(held), 5)], "; "))
	}
	return nil
}

// Run loops until ctx ends: a full sync first, then batches.
func (r *Runner) Run(ctx context.Context) {
	r.Trigger() // the initial full sync counts as queued
	now := r.cfg.Clock.Now()
	nextFull, lastRun := now, time.Time{}
	failures, retryFull, fullOK := 0, false, false
	for {
		due := r.nextDue(now, lastRun, nextFull, failures)
		if wait := due.Sub(r.cfg.Clock.Now()); wait > 0 {
			timer := r.cfg.Clock.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-r.kick:
				timer.Stop()
				now = r.cfg.Clock.Now()
				continue
			case <-timer.C():
			}
		}
		if ctx.Err() != nil {
			return
		}
		now = r.cfg.Clock.Now()
		full := retryFull || !now.Before(nextFull)
		requested := r.takeRequest()
		retry := requested || !r.retryAt.IsZero() && !now.Before(r.retryAt)
		err := r.attempt(ctx, full, retry, full && fullOK && !retryFull)
		lastRun = now
		if err != nil {
			failures++
			retryFull = full
			if requested {
				r.mu.Lock()
				r.requested = true
				r.mu.Unlock()
			}
			continue
		}
		failures, retryFull = 0, false
		if full {
			nextFull, fullOK = now.Add(r.cfg.SyncPeriod), true
		}
	}
}

// nextDue is when the next attempt should start.
func (r *Runner) nextDue(now, lastRun, nextFull time.Time, failures int) time.Time {
	if failures > 0 {
		// The backoff is capped at the sync period, so a retry never waits
		// past a due full sync; a due full sync makes the retry full.
		return lastRun.Add(r.backoff(failures))
	}
	due := nextFull
	r.mu.Lock()
	requested := r.requested
	r.mu.Unlock()
	if requested || r.tracker.HasPending() {
		pending := lastRun.Add(r.cfg.MinSyncPeriod)
		if pending.Before(now) {
			pending = now
		}
		due = earliest(pending, due)
	}
	return earliest(r.retryAt, due)
}

func (r *Runner) backoff(failures int) time.Duration {
	d := r.cfg.BackoffInitial
	for i := 1; i < failures && d < r.cfg.BackoffMax; i++ {
		d *= 2
	}
	return min(d, r.cfg.BackoffMax)
}

// attempt takes one batch from the tracker and hands it to the driver;
// only a success (a Partial included) commits it. retry: the driver asked
// to be called again now, even with nothing changed. periodic: a full
// sync may be a Resync (Resyncer).
func (r *Runner) attempt(ctx context.Context, full, retry, periodic bool) (err error) {
	start := r.cfg.Clock.Now()
	r.mu.Lock()
	r.inFlight, r.queued = earliest(r.queued, r.inFlight), time.Time{}
	r.status.AttemptSince = start
	r.mu.Unlock()

	rs, resync := r.applier.(Resyncer)
	resync = resync && full && periodic
	b := r.tracker.Next(full && !resync)
	res := Result{Full: full, Started: start, Changed: b.Delta.Len()}
	if b.Full {
		res.Changed = len(b.Snapshot.ServicePorts)
	}
	if resync {
		err = r.call(func() error { return rs.Resync(ctx, b.Delta) })
	} else {
		err = r.call(func() error { return r.hand(ctx, b, retry) })
	}
	var partial Partial
	if errors.As(err, &partial) {
		// Applied, but for what the driver holds back and retries.
		err, res.Degraded = nil, partial.Held()
		r.retryAt = partial.RetryAt()
	} else if err == nil {
		r.retryAt = time.Time{}
	}
	res.Duration = r.cfg.Clock.Since(start)
	res.Err = err

	r.mu.Lock()
	r.status.AttemptSince = time.Time{}
	if err == nil {
		r.status.Degraded = res.Degraded
		r.tracker.Commit(b)
		res.ChangedAt = b.ChangedAt
		r.inFlight = time.Time{}
		// A trigger that came after this attempt began but whose change
		// the batch already carried leaves nothing to do: it must not
		// stay queued (health would report a change waiting until the
		// next full sync). Checked under r.mu: a change the tracker takes
		// after this check triggers again once r.mu is released.
		if !r.tracker.HasPending() {
			r.queued = time.Time{}
		}
		r.status.LastSuccess, r.status.LastError, r.status.Failures = start, nil, 0
	} else {
		r.status.LastError = err
		r.status.Failures++
	}
	r.mu.Unlock()
	if r.obs != nil {
		r.obs.Synced(res)
	}
	return err
}

// call runs a call of the driver, turning a panic into an error so one
// bad batch never takes the proxy down.
func (r *Runner) call(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("driver panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return f()
}

// hand hands a batch to the driver: Sync for a full one, else Apply.
func (r *Runner) hand(ctx context.Context, b *tracker.Batch, retry bool) error {
	if b.Full {
		return r.applier.Sync(ctx, b.Snapshot)
	}
	if b.Delta.Empty() && !retry {
		return nil
	}
	return r.applier.Apply(ctx, b.Delta)
}

// earliest returns the earlier non-zero time.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
