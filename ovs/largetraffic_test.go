//go:build linux

package ovs

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// A Service of 2,415 endpoints, 2,400 of them addresses that exist only
// in its groups (no pod has them: their connections are dropped) and
// three real pods, one on the other node, on five ports each (a named
// targetPort may be a different number on each pod: a slice a port):
// real connections reach every real pod through the tree of groups; a
// pod added is reached, a pod removed is out of the bridge, and a
// connection held open to a pod that stays keeps working through both.
func TestTrafficThroughALargeService(t *testing.T) {
	w := newWorld(t)
	const firstPort, ports = 7070, 5
	vip := ap("10.96.0.90", 80)
	w.tr.UpsertService(object.ServiceOf(Service("ns", "big", ClusterIPs(vip.Addr().String()), Port("http", tcp, 80, 0))))
	// endpoints sets one port's slice: 480 addresses no pod has, on both
	// nodes, and the real pods'.
	endpoints := func(port int, reals ...netip.Addr) {
		opts := []SliceOption{SlicePort("http", tcp, int32(port))}
		for i := range 240 {
			opts = append(opts, onNode1(fmt.Sprintf("10.244.1.%d", i+14)), onNode2(fmt.Sprintf("10.244.2.%d", i+14)))
		}
		for _, ip := range reals {
			if strings.HasPrefix(ip.String(), "10.244.2.") {
				opts = append(opts, onNode2(ip.String()))
			} else {
				opts = append(opts, onNode1(ip.String()))
			}
		}
		w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", fmt.Sprintf("big-%d", port), "big", v4, opts...)))
	}
	serve := func(p *ovstest.Pod) {
		for port := firstPort; port < firstPort+ports; port++ {
			ovstest.ServeIdentityEcho(t, p.NS, uint16(port), p.Name)
		}
	}
	for _, p := range []*ovstest.Pod{w.p1, w.p2, w.r1} {
		serve(p)
	}
	for port := firstPort; port < firstPort+ports; port++ {
		endpoints(port, p1IP4, p2IP4, remote)
	}
	w.sync()
	if n := w.bucketsTo(":7071"); n != 483 {
		t.Fatalf("the bridge holds %d buckets of one port, want 483", n)
	}

	reach := func(want ...string) {
		t.Helper()
		if seen := w.reachAll(vip, want); len(seen) < len(want) {
			t.Fatalf("reached %v of %v through %s", seen, want, vip)
		}
	}
	reach("p1", "p2", "r1")
	held, heldID := w.holdOpen(vip)
	defer held.Close()
	// The local pod that goes at the scale-down: not the held one.
	gone, stays := p2IP4, p1IP4
	if heldID == "p2" {
		gone, stays = p1IP4, p2IP4
	}

	// Scale up: a pod comes.
	p3IP := netip.MustParseAddr("10.244.1.8")
	p3 := w.n.AddPod(t, "p3", p3IP)
	serve(p3)
	for port := firstPort; port < firstPort+ports; port++ {
		endpoints(port, p1IP4, p2IP4, remote, p3IP)
	}
	w.apply()
	reach("p3")
	if err := held.RoundTrip("after scale-up", probeTimeout); err != nil {
		t.Fatalf("the connection held open to %s broke when a pod came: %v", heldID, err)
	}

	// Scale down: a local pod goes, and one port's slice with its 480.
	for port := firstPort; port < firstPort+ports-1; port++ {
		endpoints(port, stays, remote, p3IP)
	}
	w.tr.DeleteEndpointSlice("ns", fmt.Sprintf("big-%d", firstPort+ports-1))
	w.apply()
	if n := w.bucketsTo(gone.String() + ":"); n != 0 {
		t.Fatalf("%s is still in %d buckets after it went", gone, n)
	}
	if n := w.bucketsTo(fmt.Sprintf(":%d", firstPort+ports-1)); n != 0 {
		t.Fatalf("%d buckets of the removed slice are left", n)
	}
	stayID := map[netip.Addr]string{p1IP4: "p1", p2IP4: "p2"}[stays]
	reach(stayID, "r1", "p3")
	if err := held.RoundTrip("after scale-down", probeTimeout); err != nil {
		t.Fatalf("the connection held open to %s broke when a pod went: %v", heldID, err)
	}
}

// bucketsTo counts the buckets of the bridge's groups whose NAT sends to
// an address and port that what ends ("10.244.1.6:7070", ":7071") or
// starts ("10.244.1.6:").
func (w *world) bucketsTo(what string) int {
	dump := w.o.Ofctl("dump-groups", bridge)
	if strings.HasSuffix(what, ":") {
		return strings.Count(dump, "nat(dst="+what)
	}
	return strings.Count(dump, what+")")
}

// reachAll connects to vip from the client pod, many at once with short
// waits (most endpoints drop them), until every one of want answered or
// 8,000 connections were tried; it returns who answered.
func (w *world) reachAll(vip netip.AddrPort, want []string) map[string]int {
	seen := map[string]int{}
	w.dialMany(vip, func(id string) (keep, stop bool) {
		seen[id]++
		for _, x := range want {
			if seen[x] == 0 {
				return false, false
			}
		}
		return false, true
	})
	return seen
}

// holdOpen opens connections to vip until one reaches an endpoint, and
// returns it open with the endpoint's identity.
func (w *world) holdOpen(vip netip.AddrPort) (*ovstest.Conn, string) {
	w.t.Helper()
	var id string
	kept := w.dialMany(vip, func(got string) (keep, stop bool) {
		id = got
		return true, true
	})
	if kept == nil {
		w.t.Fatalf("no connection through %s reached an endpoint", vip)
	}
	return kept, id
}

// dialMany dials vip from the client pod from 64 goroutines, at most
// 8,000 times, handing each answer's identity to seen (one call at a
// time) until it says stop; the first connection it says to keep is
// returned open.
func (w *world) dialMany(vip netip.AddrPort, seen func(id string) (keep, stop bool)) *ovstest.Conn {
	var mu sync.Mutex
	var kept *ovstest.Conn
	stopped := false
	var tries atomic.Int32
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tries.Add(1) <= 8000 {
				c, id, err := ovstest.DialIdentity(w.client.NS, vip, 300*time.Millisecond)
				mu.Lock()
				if stopped {
					mu.Unlock()
					if c != nil {
						c.Close()
					}
					return
				}
				if err != nil {
					mu.Unlock()
					continue
				}
				keep, stop := seen(id)
				if keep && kept == nil {
					kept = c
				} else {
					c.Close()
				}
				stopped = stop
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return kept
}
