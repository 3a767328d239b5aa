package ovs

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
)

// BenchmarkMemorySizing is what the live heap grows by per Service and
// per endpoint, so a user can size the DaemonSet: the objects as a
// source keeps them (the core's copies, which the kube source's
// informers hold), the tracker and its graph, and the OVS driver's model
// with everything committed. It builds the synthetic cluster at 10k
// Services with 1 and with 20 endpoints each (an endpoint in a slice
// of its Service) and fits heap = a·Services + b·endpoints. Not in it:
// the process's fixed share (the binary, the runtime, client-go, the
// servers: the API server benchmark's RSS less this), and the collector's
// headroom (GOGC=100: the heap grows to twice what is live between
// collections).
func BenchmarkMemorySizing(b *testing.B) {
	const services = 10000
	live := func(epsPer int) float64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tr, m := sizedCluster(b, services, epsPer)
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(tr)
		runtime.KeepAlive(m)
		return float64(after.HeapAlloc) - float64(before.HeapAlloc)
	}
	b.Run(fmt.Sprintf("services=%d", services), func(b *testing.B) {
		var one, twenty float64
		for b.Loop() {
			one, twenty = live(1), live(20)
		}
		perEndpoint := (twenty - one) / float64(services*19)
		perService := one/services - perEndpoint
		b.ReportMetric(perService, "B/service")
		b.ReportMetric(perEndpoint, "B/endpoint")
		b.ReportMetric(one/(1<<20), "heap-1-endpoint-MiB")
		b.ReportMetric(twenty/(1<<20), "heap-20-endpoints-MiB")
	})
}

// sizedCluster is the synthetic cluster in a tracker and a committed OVS
// model; the API objects it was made from are garbage on return.
func sizedCluster(b *testing.B, services, epsPer int) (*tracker.Tracker, *engine.Model) {
	tr := tracker.New(tracker.Options{NodeName: "node-0"})
	testobj.Synthetic(services, epsPer).Feed(tr)
	m, _ := committedModel(b, tr)
	return tr, m
}
