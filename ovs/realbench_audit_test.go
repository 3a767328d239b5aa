//go:build linux

package ovs

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/object"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// auditUnderChanges starts a periodic audit (a Resync with nothing
// changed) and makes endpoint changes, 10 ms apart, until the audit has
// handed its reads over: how long the audit took, what it cost
// ovs-vswitchd, and how long a change's Apply took while it ran (its
// bundle waits for what OVS is answering the audit).
func auditUnderChanges(b *testing.B, ctx context.Context, o *ovstest.OVS, d *Driver, tr *tracker.Tracker, versions []*object.EndpointSlice) {
	done := make(chan struct{})
	d.mu.Lock()
	d.watch.suspect.Store(true) // an audit that reads the bridge, whatever the flow monitor said
	d.audit.hook = func(stage string) {
		if stage == "done" {
			close(done)
		}
	}
	d.mu.Unlock()
	vs0, err := o.VswitchdCPU()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	bt := tr.Next(false)
	if err := d.Resync(ctx, bt.Delta); err != nil {
		b.Fatal(err)
	}
	tr.Commit(bt)
	var took []time.Duration
	for i := 0; ; i++ {
		select {
		case <-done:
		case <-time.After(10 * time.Millisecond):
			took = append(took, timedChange(b, ctx, d, tr, versions[i%2]))
			continue
		}
		break
	}
	audit := time.Since(start)
	vs1, err := o.VswitchdCPU()
	if err != nil {
		b.Fatal(err)
	}
	d.mu.Lock()
	d.audit.hook = nil
	d.mu.Unlock()
	b.ReportMetric(audit.Seconds(), "audit-s")
	b.ReportMetric((vs1 - vs0).Seconds(), "audit-vswitchd-cpu-s")
	b.ReportMetric(float64(len(took)), "changes-in-audit")
	if len(took) > 0 {
		b.ReportMetric(percentile(took, 50), "apply-in-audit-p50-ms")
		b.ReportMetric(percentile(took, 99), "apply-in-audit-p99-ms")
	}
}
