package ovs

import (
	"context"
	"errors"
	"time"

	"k8s.io/klog/v2"
)

// settler makes sure ovs-vswitchd's datapath follows a committed bundle.
// Until a revalidator round that began after the commit has ended, the
// datapath may still hold flows cached from the old tables, and a
// connection whose first packet takes one is committed to conntrack
// without the new NAT and stays broken; with the settler, "Apply
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
// So for a change (up to purgeAbove messages) the wait request goes over
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
type settler struct {
	waitConn ctlConn // the wait request's own: it holds its answer back
	armed    bool
}

func newSettler(runDir string) settler { return settler{waitConn: ctlConn{runDir: runDir}} }

const (
	purgeAbove    = 1024 // messages
	settleTimeout = 2 * time.Second
	pokeFirst     = 500 * time.Microsecond
	pokeEvery     = time.Millisecond
	pokeEveryMax  = 4 * time.Millisecond
)

// arm sends the wait request; wait reads its answer.
func (s *settler) arm() error {
	if s.armed {
		return errors.New("revalidator wait already armed")
	}
	if err := s.waitConn.send("revalidator/wait"); err != nil {
		return err
	}
	s.armed = true
	return nil
}

// wait reads the armed request's answer (at most settleTimeout), poking
// the main loop over poke while it is due.
func (s *settler) wait(ctx context.Context, poke *ctlConn) error {
	if !s.armed {
		return errors.New("revalidator wait not armed")
	}
	s.armed = false
	answered := make(chan error, 1)
	go func() {
		_, err := s.waitConn.recv(settleDeadline(ctx))
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
			poke.call(time.Now().Add(time.Second), "version")
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

// disarm forgets an armed request whose commit failed (its answer would
// come only with the next timed round).
func (s *settler) disarm() {
	if s.armed {
		s.waitConn.close()
		s.armed = false
	}
}

func (s *settler) close() { s.waitConn.close() }

// follower has the datapath follow each commit of bridgeFlows: a bundle
// of up to purgeAbove messages by a revalidator wait armed right before
// its commit, a larger one by a purge after it. Failures are logged: they
// do not fail the change.
type follower struct {
	settler *settler
	ctl     *ctlConn
	purge   bool
	armErr  error
	// lastSettle is how long the last non-empty commit took to settle
	// (read by benchmarks).
	lastSettle time.Duration
}

// beforeCommit returns what to run right before a bundle of n messages is
// committed (nil: nothing).
func (f *follower) beforeCommit(n int) func() {
	f.purge, f.armErr = n > purgeAbove, nil
	if f.purge {
		return nil
	}
	return func() { f.armErr = f.settler.arm() }
}

// abandon forgets what beforeCommit armed: the commit failed.
func (f *follower) abandon() { f.settler.disarm() }

// afterCommit waits until the datapath follows the committed bundle.
func (f *follower) afterCommit(ctx context.Context) {
	settled := time.Now()
	err := f.armErr
	switch {
	case f.purge:
		_, err = f.ctl.call(settleDeadline(ctx), "revalidator/purge")
	case err == nil:
		err = f.settler.wait(ctx, f.ctl)
	}
	if err != nil {
		klog.InfoS("Could not make sure the datapath took the new flows; cached datapath flows may serve the old state briefly", "err", err)
	}
	f.lastSettle = time.Since(settled)
}
