//go:build linux

package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
)

// watchWitness is a second client of the API server watching the probe's
// EndpointSlice beside the proxy: when each version of it was delivered
// tells the API server's part of a change (write, etcd, the watch) from
// what follows it (the proxy and its dataplane), in every run, without
// the proxy's log.
type watchWitness struct {
	mu      sync.Mutex
	arrived map[string]time.Time // by resourceVersion
	closed  bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// witness starts watching the slice name in eps; stop ends it.
func witness(b testing.TB, eps discoveryclient.EndpointSliceInterface, name string) *watchWitness {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := eps.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		cancel()
		b.Fatalf("watching %s: %v", name, err)
	}
	ww := &watchWitness{arrived: map[string]time.Time{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(ww.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			now := time.Now()
			if s, ok := ev.Object.(*discovery.EndpointSlice); ok {
				ww.mu.Lock()
				ww.arrived[s.ResourceVersion] = now
				ww.mu.Unlock()
			}
		}
		ww.mu.Lock()
		ww.closed = true
		ww.mu.Unlock()
	}()
	return ww
}

// deliveredAt returns when version rv was delivered, waiting up to bound
// for it; false if it was not (the watch closed, or it is slower still).
func (w *watchWitness) deliveredAt(rv string, bound time.Duration) (time.Time, bool) {
	for deadline := time.Now().Add(bound); ; time.Sleep(time.Millisecond) {
		w.mu.Lock()
		at, ok := w.arrived[rv]
		closed := w.closed
		w.mu.Unlock()
		if ok || closed || time.Now().After(deadline) {
			return at, ok
		}
	}
}

func (w *watchWitness) stop() {
	w.cancel()
	<-w.done
}

// reportSplit reports, for the changes the witness saw delivered, the API
// server's part (write → the watch event delivered) and the rest (the
// event → traffic following: the proxy, its dataplane, the probe's
// spacing), and how many changes it did not see.
func reportSplit(b *testing.B, delivered, took []time.Duration, name string) {
	var api, rest []time.Duration
	for i, d := range delivered {
		if d >= 0 {
			api = append(api, d)
			// 0 when traffic followed before the witness had the event:
			// the API server serves the two watches one after the other.
			rest = append(rest, max(0, took[i]-d))
		}
	}
	b.ReportMetric(float64(len(delivered)-len(api)), name+"-unwitnessed")
	if len(api) > 0 {
		reportPercentiles(b, api, "write-to-watch")
		reportPercentiles(b, rest, "watch-to-"+name)
	}
}
