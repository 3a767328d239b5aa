//go:build linux

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/conformance/ovsharness"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAPIServerOutage: switchyard cut off from the API server keeps the
// dataplane as it was (traffic goes on), stays healthy while it has
// nothing pending (upstream's /healthz rule: it cannot know of changes it
// cannot see), survives the API server itself stopping and starting, and
// applies what changed while it was cut off once it can reach it again;
// both with the initial state streamed (WatchList, client-go's default)
// and listed (client-go's gate off, as against an API server before 1.34):
// after the API server's restart switchyard reads its state again.
func TestAPIServerOutage(t *testing.T) {
	for _, mode := range []struct {
		name      string
		watchList bool
	}{{"WatchList", true}, {"lists", false}} {
		t.Run(mode.name, func(t *testing.T) {
			if !mode.watchList {
				t.Setenv("KUBE_FEATURE_WatchListClient", "false") // switchyard's client-go reads it
			}
			apiServerOutage(t, mode.watchList)
		})
	}
}

func apiServerOutage(t *testing.T, watchList bool) {
	c := startCluster(t)
	ctx := context.Background()
	c.addNodes(t)
	ns := "outage"
	vip, eps := webService(t, c, ns, "web")
	p := &proxy{}
	w := ovsharness.BuildWorld(t, ovsharness.WorldOptions{StartNode1: p.onNode1(t, c, adminToken, "--sync-period=4s")})
	w.Timeout = 200 * time.Millisecond
	fwd := p.fwd
	if err := waitFor(30*time.Second, func() error {
		if !reaches(w, "c", vip, "p1:8080") {
			return fmt.Errorf("not programmed yet")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// Cut off; the endpoint moves to p2 meanwhile.
	fwd.cut()
	if _, err := eps.Update(ctx, slice(ns, "web-1", "web", 8080, endpoint{"10.244.1.6", "node-1", false}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server itself goes away and comes back too.
	c.stopAPIServer()
	deadline := time.Now().Add(10 * time.Second) // > 2x the sync period
	for time.Now().Before(deadline) {
		if !reaches(w, "c", vip, "p1:8080") {
			t.Fatalf("while cut off, the dataplane lost the last state it had (p1)")
		}
		if err := p.healthy(); err != nil {
			t.Fatalf("while cut off with nothing pending, /healthz: %v (upstream stays healthy)", err)
		}
		if p.proc.Exited() {
			t.Fatal("switchyard exited while the API server was away")
		}
		time.Sleep(250 * time.Millisecond)
	}
	c.startAPIServer()
	back := time.Now()
	fwd.restore()
	if err := waitFor(2*time.Minute, func() error {
		if !reaches(w, "c", vip, "p2:8080") {
			return fmt.Errorf("the change made while cut off is not applied")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("cut off 10 s (API server stopped and restarted meanwhile): the change made meanwhile reached traffic %v after the API server was reachable again",
		time.Since(back).Round(time.Millisecond))
	// And the watch works again: a new change follows promptly.
	t0 := time.Now()
	if _, err := eps.Update(ctx, slice(ns, "web-1", "web", 8080, endpoint{"10.244.1.8", "node-1", false}), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(followBound, func() error {
		if !reaches(w, "c", vip, "p3:8080") {
			return fmt.Errorf("a change after the reconnect is not applied")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("a change after the reconnect reached traffic in %v", time.Since(t0).Round(time.Millisecond))
	// Since its restart the API server answered switchyard's reads of
	// EndpointSlices (nothing else here reads them whole) with lists
	// only when client-go's WatchList was off.
	if lists := apiServerRequests(t, c, "LIST", "endpointslices"); (lists > 0) == watchList {
		t.Errorf("WatchList %v: the restarted API server answered %v EndpointSlice lists", watchList, lists)
	}
}

// apiServerRequests is how many requests of verb for resource
// kube-apiserver has answered since it started, whatever their answer
// (apiserver_request_total on its /metrics).
func apiServerRequests(t testing.TB, c *cluster, verb, resource string) float64 {
	t.Helper()
	var n float64
	for _, line := range strings.Split(apiServerMetrics(t, c), "\n") {
		rest, isRequests := strings.CutPrefix(line, "apiserver_request_total{")
		labels, value, ok := strings.Cut(rest, "} ")
		if isRequests && ok && strings.Contains(labels, `verb="`+verb+`"`) && strings.Contains(labels, `resource="`+resource+`"`) {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("apiserver_request_total: %q", line)
			}
			n += v
		}
	}
	return n
}
