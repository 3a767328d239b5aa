//go:build linux

package ovs

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/object"
	"github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"k8s.io/klog/v2"
)

// BenchmarkRealOVSLargeService is the 10k Services load (10 endpoints
// each) plus one Service of 1k, 10k or 50k endpoints (slices of 1 000,
// every tenth not ready), in a real OVS: the cold sync of it all, then
// 200 changes of one of the large Service's endpoints (readiness flips),
// each timed from the slice reaching the core until the datapath followed,
// with the core's part and the driver's Apply beside it. Run with
// -benchtime 1x (and -count for several runs: the driver's log is
// silenced, as go test prints it amid the result lines of later runs).
func BenchmarkRealOVSLargeService(b *testing.B) {
	const changes = 200
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	b.Cleanup(func() { klog.SetOutput(os.Stderr); klog.LogToStderr(true) })
	for _, eps := range []int{1000, 10_000, 50_000} {
		b.Run(fmt.Sprintf("services=10000/large=%d", eps), func(b *testing.B) {
			for b.Loop() {
				largeServiceScenario(b, eps, changes)
			}
		})
	}
}

func largeServiceScenario(b *testing.B, eps, changes int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	o, d := benchDriver(b, ctx)
	c := testobj.Synthetic(10_000, 10)
	tr := tracker.New(tracker.Options{NodeName: "node-0"})
	c.Feed(tr)
	slices := withLarge(tr, eps, false)
	full := tr.Next(true)
	start := time.Now()
	if err := d.Sync(ctx, full.Snapshot); err != nil {
		b.Fatal(err)
	}
	cold := time.Since(start)
	tr.Commit(full)
	// Every ready endpoint of the large Service is a bucket in OVS.
	buckets := strings.Count(o.Ofctl("dump-groups", bridge), "nat(dst=10.")
	if want := 10_000*10 + eps*9/10; buckets < want {
		b.Fatalf("OVS holds %d endpoint buckets, want at least %d", buckets, want)
	}

	target := slices[len(slices)/2]
	flipped := target.DeepCopy()
	notReady := false
	flipped.Endpoints[3].Conditions.Ready = &notReady
	versions := []*object.EndpointSlice{object.EndpointSliceOf(flipped), object.EndpointSliceOf(target)}
	before := d.conn.Stats()
	var change, apply, core, inOVS, settle []time.Duration
	for i := range changes {
		t0 := time.Now()
		tr.UpsertEndpointSlice(versions[i%2])
		bt := tr.Next(false)
		t1 := time.Now()
		if err := d.Apply(ctx, bt.Delta); err != nil {
			b.Fatal(err)
		}
		apply = append(apply, time.Since(t1))
		core = append(core, t1.Sub(t0))
		change = append(change, time.Since(t0))
		inOVS = append(inOVS, d.flows.lastCommit)
		settle = append(settle, d.flows.follow.lastSettle)
		tr.Commit(bt)
	}
	after := d.conn.Stats()
	b.ReportMetric(cold.Seconds(), "cold-sync-s")
	b.ReportMetric(float64(buckets), "buckets-in-ovs")
	b.ReportMetric(percentile(change, 50), "change-p50-ms")
	b.ReportMetric(percentile(change, 99), "change-p99-ms")
	b.ReportMetric(percentile(apply, 50), "apply-p50-ms")
	b.ReportMetric(percentile(apply, 99), "apply-p99-ms")
	b.ReportMetric(percentile(inOVS, 99), "in-ovs-p99-ms")
	b.ReportMetric(percentile(settle, 99), "settle-p99-ms")
	b.ReportMetric(percentile(core, 50), "core-p50-ms")
	b.ReportMetric(percentile(core, 99), "core-p99-ms")
	b.ReportMetric(float64(after.FlowMods-before.FlowMods)/float64(changes), "flow-mods/change")
	b.ReportMetric(float64(after.GroupMods-before.GroupMods)/float64(changes), "group-mods/change")
}
