package ovs

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
)

// BenchmarkAuditBegin is what an audit's start costs under the driver's
// lock, where a change waits for it: BeginAudit, then the slices (p99 and
// longest; a collection's stop can fall in one) of the copy of the
// installed view and of the model's host side (copyForAudit: the lock is
// let go between two), and the whole copy with the room made for it
// beforehand.
func BenchmarkAuditBegin(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			tr := tracker.New(tracker.Options{NodeName: "node-0"})
			testobj.Synthetic(n, 10).Feed(tr)
			m, _ := committedModel(b, tr)
			var begin, whole time.Duration
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				view := m.State().BeginAudit()
				sizes := m.Host().Sizes()
				begin = max(begin, time.Since(t0))
				view.Reserve()
				side := engine.ReservedSide(sizes, engine.HostSide{})
				last := time.Now()
				p := &engine.Pause{Every: auditSlice, Yield: func() {
					took = append(took, time.Since(last))
					last = time.Now()
				}}
				view.Fill(p)
				m.Host().Side(m.RoutesFrontend, p, side)
				took = append(took, time.Since(last))
				whole += time.Since(t0)
			}
			b.ReportMetric(ms(begin), "begin-max-ms")
			slices.Sort(took)
			b.ReportMetric(ms(took[len(took)*99/100]), "slice-p99-ms")
			b.ReportMetric(ms(took[len(took)-1]), "slice-max-ms")
			b.ReportMetric(float64(whole.Microseconds())/1000/float64(b.N), "copy-ms")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
