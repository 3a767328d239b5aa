package ovs

import (
	"fmt"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
)

// BenchmarkAuditBegin is what an audit's start costs under the driver's
// lock, where a change waits for it: the copy of the installed view and
// of the model's host side.
func BenchmarkAuditBegin(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			tr := tracker.New(tracker.Options{NodeName: "node-0"})
			testobj.Synthetic(n, 10).Feed(tr)
			m, _ := committedModel(b, tr)
			var view, host time.Duration
			for b.Loop() {
				t0 := time.Now()
				m.State().BeginAudit()
				t1 := time.Now()
				m.Host().Side(m.RoutesFrontend)
				host += time.Since(t1)
				view += t1.Sub(t0)
			}
			b.ReportMetric(float64(view.Microseconds())/1000/float64(b.N), "view-ms")
			b.ReportMetric(float64(host.Microseconds())/1000/float64(b.N), "host-ms")
		})
	}
}
