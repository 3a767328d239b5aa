//go:build linux

package e2e

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/conformance/ovsharness"
)

// Checks of what traffic does now, each made of real connections in the
// conformance world.

func probe(w *ovsharness.World, from string, dst netip.AddrPort) conformance.Answer {
	return w.Probe(conformance.Probe{From: from, Dst: dst, Protocol: "TCP"})
}

// reaches: one connection is answered by id.
func reaches(w *ovsharness.World, from string, dst netip.AddrPort, id string) bool {
	a := probe(w, from, dst)
	return a.Outcome == conformance.Answered && a.Identity == id
}

// seesAll: within n connections, every id answers, and nobody else.
func seesAll(w *ovsharness.World, from string, dst netip.AddrPort, n int, ids ...string) bool {
	seen := map[string]bool{}
	for range n {
		a := probe(w, from, dst)
		if a.Outcome != conformance.Answered {
			return false
		}
		seen[a.Identity] = true
	}
	for _, id := range ids {
		if !seen[id] {
			return false
		}
	}
	return len(seen) == len(ids)
}

// never: n connections in a row are answered, none by id.
func never(w *ovsharness.World, from string, dst netip.AddrPort, n int, id string) bool {
	for range n {
		a := probe(w, from, dst)
		if a.Outcome != conformance.Answered || a.Identity == id {
			return false
		}
	}
	return true
}

// unreached: a connection is answered by no backend.
func unreached(w *ovsharness.World, from string, dst netip.AddrPort) bool {
	return probe(w, from, dst).Outcome != conformance.Answered
}

// Following a change: connections overlap, so when the change took
// effect is known to a probe's spacing, not to a whole connection's time
// (~10 ms through the userspace datapath).
const (
	probeSpacing   = 2 * time.Millisecond
	probesInFlight = 16
)

// firstReaching starts a connection from `from` to dst every
// probeSpacing (at most probesInFlight at once) until one is answered by
// id, lets those under way finish, and returns how long after t0 the
// earliest connection answered by id was started: the change was in
// effect by then. unanswered counts connections answered by nobody (not
// the old endpoint either: worth knowing why).
func firstReaching(w *ovsharness.World, from string, dst netip.AddrPort, id string, t0 time.Time) (time.Duration, int, error) {
	type result struct {
		sent time.Duration
		a    conformance.Answer
	}
	results := make(chan result, probesInFlight)
	inFlight, unanswered, best := 0, 0, time.Duration(-1)
	var lastDetail string
	start := func() {
		inFlight++
		sent := time.Since(t0)
		go func() { results <- result{sent, probe(w, from, dst)} }()
	}
	tick := time.NewTicker(probeSpacing)
	defer tick.Stop()
	start()
	for inFlight > 0 {
		select {
		case <-tick.C:
			if best < 0 && inFlight < probesInFlight && time.Since(t0) < followBound {
				start()
			}
		case r := <-results:
			inFlight--
			switch {
			case r.a.Outcome == conformance.Answered && r.a.Identity == id:
				if best < 0 || r.sent < best {
					best = r.sent
				}
			case r.a.Outcome != conformance.Answered:
				unanswered++
				lastDetail = fmt.Sprintf("%s (%s)", r.a.Outcome, r.a.Detail)
			}
			if inFlight == 0 && best < 0 && time.Since(t0) < followBound {
				start()
			}
		}
	}
	if best < 0 {
		return 0, unanswered, fmt.Errorf("not followed within %v (last unanswered: %s)", followBound, lastDetail)
	}
	return best, unanswered, nil
}
