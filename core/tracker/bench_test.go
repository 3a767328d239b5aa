package tracker

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/object"
	"github.com/switchyard-proxy/switchyard/core/testobj"
)

var sizes = []int{1000, 10000}

func feed(tr *Tracker, c testobj.Cluster) { c.Feed(tr) }

// BenchmarkFullBuild: every Service and slice handed to a new tracker, then
// the whole graph built (the start-up cost).
func BenchmarkFullBuild(b *testing.B) {
	for _, n := range sizes {
		c := testobj.Synthetic(n, 10)
		b.Run(fmt.Sprintf("services=%d/endpoints=%d", n, n*10), func(b *testing.B) {
			b.ReportAllocs()
			var heap, rss uint64
			for b.Loop() {
				tr := New(Options{NodeName: "node-0"})
				feed(tr, c)
				bt := tr.Next(true)
				if len(bt.Snapshot.ServicePorts) != n {
					b.Fatalf("built %d service ports", len(bt.Snapshot.ServicePorts))
				}
				tr.Commit(bt)
				b.StopTimer()
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				heap = ms.HeapAlloc
				rss = testobj.ProcessRSS(0)
				runtime.KeepAlive(tr)
				b.StartTimer()
			}
			// Heap and RSS after the build, with the Kubernetes objects the
			// core keeps (and, for RSS, the benchmark process around it).
			b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
			b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
		})
	}
}

// BenchmarkOneEndpointChange: one endpoint of one Service flips readiness;
// the delta is taken and committed. It must cost the same at both sizes.
func BenchmarkOneEndpointChange(b *testing.B) {
	for _, n := range sizes {
		c := testobj.Synthetic(n, 10)
		tr := New(Options{NodeName: "node-0"})
		feed(tr, c)
		tr.Commit(tr.Next(true))
		target := c.Slices[n/2]
		flipped := target.DeepCopy()
		ready := false
		flipped.Endpoints[3].Conditions.Ready = &ready
		// Converted once, as a source hands them over: the core's work is measured.
		versions := []*object.EndpointSlice{object.EndpointSliceOf(flipped), object.EndpointSliceOf(target)}
		b.Run(fmt.Sprintf("services=%d/endpoints=%d", n, n*10), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				tr.UpsertEndpointSlice(versions[i%2])
				bt := tr.Next(false)
				if len(bt.Delta.Updated) != 1 {
					b.Fatalf("delta touches %d service ports, want 1", bt.Delta.Len())
				}
				tr.Commit(bt)
				i++
			}
		})
	}
}
