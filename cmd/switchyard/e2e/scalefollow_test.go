//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
)

// prober makes one connection to the probe Service through one proxy's
// dataplane.
type prober struct {
	name  string
	probe func() conformance.Answer
	bound time.Duration // how long traffic may take to follow a change
}

// probeChanges moves the probe Service's one endpoint between two pods,
// one write at a time, and times how long each proxy's traffic takes to
// follow.
type probeChanges struct {
	eps  discoveryclient.EndpointSliceInterface
	ns   string
	done int         // changes written so far
	at   []time.Time // when each was written
	// delivered is, per change, how long after its write the witness
	// (a watch beside the proxies') had it; -1 if it did not.
	delivered []time.Duration
	// missed counts connections answered by no endpoint while following
	// (not the old endpoint either: worth knowing why), per prober.
	missed map[string]int
}

// probePods are where the endpoint moves, in turn: it starts on p1.
var probePods = [2]struct{ ip, id string }{{"10.244.1.6", "p2:8080"}, {"10.244.1.5", "p1:8080"}}

// current is the identity of the pod the endpoint is on now.
func (c *probeChanges) current() string {
	if c.done == 0 {
		return probePods[1].id
	}
	return probePods[(c.done-1)%2].id
}

// follow makes n changes 300 ms apart and returns, per prober, how long
// after each write its traffic reached the new endpoint.
func (c *probeChanges) follow(b *testing.B, n int, probers ...prober) map[string][]time.Duration {
	if c.missed == nil {
		c.missed = map[string]int{}
	}
	took := map[string][]time.Duration{}
	w := witness(b, c.eps, "probe-1")
	defer w.stop()
	for range n {
		time.Sleep(300 * time.Millisecond)
		next := probePods[c.done%2]
		c.done++
		t0 := time.Now()
		written, err := c.eps.Update(context.Background(), slice(c.ns, "probe-1", "probe", 8080, endpoint{next.ip, "node-1", false}), metav1.UpdateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		c.at = append(c.at, t0)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, p := range probers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d, unanswered, err := firstReaching(p.probe, next.id, t0, p.bound)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					b.Errorf("%s, change %d: %v", p.name, c.done, err)
				}
				c.missed[p.name] += unanswered
				took[p.name] = append(took[p.name], d)
			}()
		}
		wg.Wait()
		delivered := time.Duration(-1)
		if at, ok := w.deliveredAt(written.ResourceVersion, time.Second); ok {
			delivered = at.Sub(t0)
		}
		c.delivered = append(c.delivered, delivered)
		if b.Failed() {
			b.FailNow()
		}
	}
	return took
}

// saveFollowed writes each change's write time, how long traffic took
// to follow it and when the witness had it, slowest first, with the CPU
// each process used meanwhile (cpu, when not nil), then the process's log
// (--v=2: every sync, with its time): where a slow change's time went.
func saveFollowed(b *testing.B, proc *ovstest.Process, path string, c *probeChanges, took []time.Duration, cpu *cpuTimeline) {
	at := c.at
	order := make([]int, len(took))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return int(took[j] - took[i]) })
	var out strings.Builder
	for _, i := range order {
		fmt.Fprintf(&out, "change %d written %s followed in %v", i, at[i].Format("15:04:05.000000"), took[i])
		if d := c.delivered[i]; d >= 0 {
			fmt.Fprintf(&out, "; a second watcher had it at %v", d)
		}
		if cpu != nil {
			fmt.Fprintf(&out, "; %s", cpu.Within(at[i], at[i].Add(took[i])))
		}
		out.WriteString("\n")
	}
	out.WriteString("\n" + proc.LogTail(20000))
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		b.Error(err)
	}
}

// Following a change: connections overlap, so when the change took
// effect is known to a probe's spacing, not to a whole connection's time
// (~10 ms through the userspace datapath).
const (
	probeSpacing   = 2 * time.Millisecond
	probesInFlight = 16
)

// firstReaching starts a connection (probe) every probeSpacing (at most
// probesInFlight at once) until one is answered by id (for at most bound), lets those under
// way finish, and returns how long after t0 the earliest connection
// answered by id was started: the change was in effect by then.
// unanswered counts connections answered by nobody.
func firstReaching(probe func() conformance.Answer, id string, t0 time.Time, bound time.Duration) (time.Duration, int, error) {
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
		go func() { results <- result{sent, probe()} }()
	}
	tick := time.NewTicker(probeSpacing)
	defer tick.Stop()
	start()
	for inFlight > 0 {
		select {
		case <-tick.C:
			if best < 0 && inFlight < probesInFlight && time.Since(t0) < bound {
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
			if inFlight == 0 && best < 0 && time.Since(t0) < bound {
				start()
			}
		}
	}
	if best < 0 {
		return 0, unanswered, fmt.Errorf("not followed within %v (last unanswered: %s)", bound, lastDetail)
	}
	return best, unanswered, nil
}
