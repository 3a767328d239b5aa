package vswitchd

import (
	"context"
	"errors"
	"time"

	"k8s.io/klog/v2"
)

// Follower makes sure ovs-vswitchd's datapath follows a committed bundle.
// Until a revalidator round that began after the commit has ended, the
// datapath may still hold flows cached from the old tables, and a
// connection whose first packet takes one is committed to conntrack
// without the new NAT and stays broken; with the Follower, "Apply
// returned" means packets follow the new flows.
//
// What OVS 3.1 does (ofproto/ofproto-dpif-upcall.c, ofproto-dpif.c,
// vswitchd/ovs-vswitchd.c):
//   - `revalidator/wait` notes the revalidators' round counter when the
//     main loop reads the request, and is answered by the main loop's
//     first pass after the counter moved, i.e. after the first round that
//     ends once the request was read;
//   - a committed bundle makes the main loop's next pass start a round
//     (at once, or 5 ms after the previous round began); rounds also run
//     every 500 ms (other_config:max-revalidator);
//   - the main loop wakes when a round ends only if it had not already
//     seen the new counter: a round that ends while the main loop is busy
//     leaves a waiting request unanswered until the loop runs again for
//     another reason, often the next timed round, 500 ms later.
//
// So for a change (up to PurgeAbove messages) the wait request goes over
// a control connection kept open (a new one is read a pass later), armed
// right before the commit request, so that OVS reads it no later than the
// pass that applies the commit, before the pass that starts the round;
// and while the answer is due, another kept connection asks OVS a trivial
// question every millisecond or two, which makes the main loop run and
// send the answer as soon as the round is over. Without both, the answer
// came up to 500 ms late (the p99 per change at 10k Services). What
// remains: a round that started before the commit and ends after the
// request was read answers it early (a timed round, or one another cause
// started; about the time OVS takes to apply the bundle in 500 ms); the
// round for the commit then runs right after it, so traffic follows at
// most one round after Apply returns.
//
// A larger bundle (a cold sync, a reconnection, hundreds of Services at
// once) keeps OVS's main loop busy long enough for a timed round to start
// and finish in between, which would answer the wait early. It is
// followed by `revalidator/purge` instead: OVS drops every datapath flow
// (they are translated anew from the new tables on their next packet)
// and answers once it has, which is exact.
//
// A Follower has the datapath follow each commit: a bundle of up to
// PurgeAbove messages by a revalidator wait armed right before its commit
// (BeforeCommit), a larger one by a purge after it (AfterCommit).
// Failures are logged: they do not fail the change. A Follower is not
// safe for concurrent use; the driver commits one bundle at a time.
type Follower struct {
	waitConn Control  // the wait request's own: it holds its answer back
	ctl      *Control // pokes and purges
	armed    bool
	purge    bool
	armErr   error
}

// NewFollower returns a Follower of the ovs-vswitchd whose pid file is in
// runDir; it pokes and purges over ctl, which it shares with its owner.
func NewFollower(runDir string, ctl *Control) *Follower {
	return &Follower{waitConn: Control{runDir: runDir}, ctl: ctl}
}

const (
	// PurgeAbove is the largest bundle (in messages) followed by a wait;
	// a larger one is followed by a purge.
	PurgeAbove    = 1024
	settleTimeout = 2 * time.Second
	pokeFirst     = 500 * time.Microsecond
	pokeEvery     = time.Millisecond
	pokeEveryMax  = 4 * time.Millisecond
)

// Open dials the wait request's connection ahead of the first commit (a
// new connection is read by OVS a main-loop pass later).
func (f *Follower) Open() error { return f.waitConn.Open() }

// Close closes the wait request's connection.
func (f *Follower) Close() { f.waitConn.Close() }

// BeforeCommit returns what to run right before a bundle of n messages is
// committed (nil: nothing).
func (f *Follower) BeforeCommit(n int) func() {
	f.purge, f.armErr = n > PurgeAbove, nil
	if f.purge {
		return nil
	}
	return func() { f.armErr = f.arm() }
}

// Abandon forgets what BeforeCommit armed: the commit failed (the wait's
// answer would come only with the next timed round).
func (f *Follower) Abandon() {
	if f.armed {
		f.waitConn.Close()
		f.armed = false
	}
}

// AfterCommit waits until the datapath follows the committed bundle, and
// returns how long that took.
func (f *Follower) AfterCommit(ctx context.Context) time.Duration {
	if f.purge {
		return f.Purge(ctx)
	}
	start := time.Now()
	err := f.armErr
	if err == nil {
		err = f.wait(ctx)
	}
	if err != nil {
		klog.InfoS("Could not make sure the datapath took the new flows; cached datapath flows may serve the old state briefly", "err", err)
	}
	return time.Since(start)
}

// Purge has the datapath drop every flow it cached, so that packets take
// the tables as they are now (after bundles committed without a wait of
// their own), and returns how long that took.
func (f *Follower) Purge(ctx context.Context) time.Duration {
	start := time.Now()
	if _, err := f.ctl.Call(settleDeadline(ctx), "revalidator/purge"); err != nil {
		klog.InfoS("Could not make sure the datapath took the new flows; cached datapath flows may serve the old state briefly", "err", err)
	}
	return time.Since(start)
}

// arm sends the wait request; wait reads its answer.
func (f *Follower) arm() error {
	if f.armed {
		return errors.New("revalidator wait already armed")
	}
	if err := f.waitConn.send("revalidator/wait"); err != nil {
		return err
	}
	f.armed = true
	return nil
}

// wait reads the armed request's answer (at most settleTimeout), poking
// the main loop over ctl while it is due.
func (f *Follower) wait(ctx context.Context) error {
	if !f.armed {
		return errors.New("revalidator wait not armed")
	}
	f.armed = false
	answered := make(chan error, 1)
	go func() {
		_, err := f.waitConn.recv(settleDeadline(ctx))
		answered <- err
	}()
	every := pokeEvery
	t := time.NewTimer(pokeFirst)
	defer t.Stop()
	for {
		select {
		case err := <-answered:
			return err
		case <-t.C:
			// A failed poke only costs the answer's promptness.
			f.ctl.Call(time.Now().Add(time.Second), "version")
			t.Reset(every)
			every = min(2*every, pokeEveryMax)
		}
	}
}

// settleDeadline is when a settle gives up: settleTimeout, or ctx's
// deadline if sooner.
func settleDeadline(ctx context.Context) time.Time {
	deadline := time.Now().Add(settleTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return deadline
}
