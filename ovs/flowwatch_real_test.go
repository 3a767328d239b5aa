//go:build linux

package ovs

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// audit runs one periodic audit (a Resync of what changed) and waits
// until the round it asked for adopted it; it reports whether the audit
// read the bridge (it looked flows up) or synced the host only.
func (w *world) audit() (readBridge bool) {
	w.t.Helper()
	stages := make(chan string, 16)
	w.d.mu.Lock()
	w.d.audit.hook = func(stage string) { stages <- stage }
	w.d.audit.ended = time.Time{} // no floor between the test's audits
	w.d.mu.Unlock()
	defer func() {
		w.d.mu.Lock()
		w.d.audit.hook = nil
		w.d.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := w.tr.Next(false)
	if err := w.d.Resync(ctx, b.Delta); err != nil {
		w.t.Fatal(err)
	}
	w.tr.Commit(b)
	for {
		select {
		case s := <-stages:
			readBridge = readBridge || s == "looked up"
			if s != "done" {
				continue
			}
			// The round it asked for (serveRounds) adopts it under the lock.
			for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				w.d.mu.Lock()
				adopted := w.d.audit.result == nil
				w.d.mu.Unlock()
				if adopted {
					return readBridge
				}
			}
			w.t.Fatal("the audit's reads were never adopted")
		case <-ctx.Done():
			w.t.Fatal("the audit never ended")
		}
	}
}

// On a real OVS, with the flow monitor on the bundles' link: after the
// first audit (the monitor was armed anew: what happened before is not
// known) audits sync the host only while nothing touches the driver's
// flows; a flow of a Service's deleted with ovs-ofctl makes the next
// audit read the bridge, and its round puts the flow back (the Service
// answers again); the audit after that syncs the host only again. A
// foreign flow with a cookie of its own changes nothing.
func TestAuditsReadTheBridgeWhenTheMonitorSaysSo(t *testing.T) {
	w := newWorld(t)
	webService(w)
	w.sync()
	if !w.d.conn.Watching() {
		t.Fatal("no flow monitor on the bundles' link")
	}
	if !w.audit() {
		t.Error("the first audit did not read the bridge")
	}
	w.o.Ofctl("add-flow", bridge, "table=20,priority=5,cookie=0x1234,actions=drop")
	time.Sleep(200 * time.Millisecond) // the monitor's report, had there been one
	if w.audit() {
		t.Error("an audit read the bridge with nothing of the driver's changed")
	}

	web := graph.ServicePortName{Namespace: "ns", Name: "web", Port: "http", Protocol: graph.TCP}
	w.d.mu.Lock()
	cookies, _ := w.d.model.State().Owned(engine.ServicePortOwner(web))
	w.d.mu.Unlock()
	for _, c := range cookies {
		w.o.Ofctl("del-flows", bridge, fmt.Sprintf("cookie=%#x/-1", c))
	}
	for end := time.Now().Add(5 * time.Second); !w.d.watch.suspect.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the monitor did not report the deleted flows")
		}
	}
	if !w.audit() {
		t.Error("the audit after a foreign delete did not read the bridge")
	}
	dump := w.o.Ofctl("dump-flows", bridge)
	for _, c := range cookies {
		if !strings.Contains(dump, fmt.Sprintf("cookie=%#x,", c)) {
			t.Errorf("flow %#x not put back", c)
		}
	}
	if id, err := ovstest.ProbeTCP(w.client.NS, netip.Addr{}, ap("10.96.0.10", 80), probeTimeout); id != "p1" {
		t.Errorf("web after the audit's repair: %q, %v", id, err)
	}
	time.Sleep(200 * time.Millisecond)
	if w.audit() {
		t.Error("the audit after the repair read the bridge: its own repair was reported as foreign")
	}
}
