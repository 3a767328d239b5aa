package ovs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
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
	waitConn, poke ctlConn
	armed          bool
}

func newSettler(runDir string) settler {
	return settler{waitConn: ctlConn{runDir: runDir}, poke: ctlConn{runDir: runDir}}
}

const (
	purgeAbove    = 1024 // messages
	settleTimeout = 2 * time.Second
	pokeFirst     = 500 * time.Microsecond
	pokeEvery     = time.Millisecond
	pokeEveryMax  = 4 * time.Millisecond
)

// dial opens both connections ahead of the first wait.
func (s *settler) dial() error { return errors.Join(s.waitConn.open(), s.poke.open()) }

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
// the main loop while it is due.
func (s *settler) wait(ctx context.Context) error {
	if !s.armed {
		return errors.New("revalidator wait not armed")
	}
	s.armed = false
	deadline := time.Now().Add(settleTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	answered := make(chan error, 1)
	go func() { answered <- s.waitConn.recv(deadline) }()
	every := pokeEvery
	t := time.NewTimer(pokeFirst)
	defer t.Stop()
	for {
		select {
		case err := <-answered:
			return err
		case <-t.C:
			// A failed poke only costs the answer's promptness.
			if err := s.poke.send("version"); err == nil {
				s.poke.recv(time.Now().Add(time.Second))
			}
			t.Reset(every)
			every = min(2*every, pokeEveryMax)
		}
	}
}

// purge drops every datapath flow (after a large bundle, see settler).
func (s *settler) purge(ctx context.Context) error {
	deadline := time.Now().Add(settleTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := s.poke.send("revalidator/purge"); err != nil {
		return err
	}
	return s.poke.recv(deadline)
}

// disarm forgets an armed request whose commit failed (its answer would
// come only with the next timed round).
func (s *settler) disarm() {
	if s.armed {
		s.waitConn.close()
		s.armed = false
	}
}

func (s *settler) close() {
	s.waitConn.close()
	s.poke.close()
}

// ctlConn is a connection to ovs-vswitchd's control socket kept open
// between requests. Any failure closes it; the next request dials again
// (ovs-vswitchd may have restarted with a new control socket).
type ctlConn struct {
	runDir string
	conn   net.Conn
	dec    *json.Decoder
	id     int
}

func (c *ctlConn) open() error {
	if c.conn != nil {
		return nil
	}
	ctl, err := vswitchdControl(c.runDir)
	if err != nil {
		return err
	}
	conn, err := net.DialTimeout("unix", ctl, 2*time.Second)
	if err != nil {
		return err
	}
	c.conn, c.dec = conn, json.NewDecoder(conn)
	return nil
}

// send writes a request; a kept connection that turns out dead gets one
// more try on a new one.
func (c *ctlConn) send(method string) error {
	for try := 0; ; try++ {
		fresh := c.conn == nil
		if err := c.open(); err != nil {
			return err
		}
		c.id++
		c.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
		err := json.NewEncoder(c.conn).Encode(unixctlRequest{ID: c.id, Method: method, Params: []string{}})
		if err == nil {
			return nil
		}
		c.close()
		if fresh || try > 0 {
			return err
		}
	}
}

// recv reads the answer to the last request.
func (c *ctlConn) recv(deadline time.Time) error {
	if c.conn == nil {
		return errors.New("no control connection")
	}
	c.conn.SetReadDeadline(deadline)
	var reply unixctlReply
	if err := c.dec.Decode(&reply); err != nil {
		c.close()
		return fmt.Errorf("ovs-vswitchd control socket: %w", err)
	}
	if reply.ID != c.id || reply.Error != nil {
		c.close()
		return fmt.Errorf("ovs-vswitchd control socket: unexpected reply %+v", reply)
	}
	return nil
}

func (c *ctlConn) close() {
	if c.conn != nil {
		c.conn.Close()
	}
	c.conn, c.dec = nil, nil
}
