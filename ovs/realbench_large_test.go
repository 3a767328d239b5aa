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
// changes of one of the large Service's endpoints (readiness flips), each
// timed from the slice reaching the core until the datapath followed, with
// the core's part and the driver's Apply beside it: first 1 000 changes
// each alone (after isolatedGap idle), then 200 back to back (units
// prefixed "burst-"). Run with
// -benchtime 1x (and -count for several runs: the driver's log is
// silenced, as go test prints it amid the result lines of later runs).
func BenchmarkRealOVSLargeService(b *testing.B) {
	const alone, burst = 1000, 200
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	b.Cleanup(func() { klog.SetOutput(os.Stderr); klog.LogToStderr(true) })
	for _, eps := range []int{1000, 10_000, 50_000} {
		b.Run(fmt.Sprintf("services=10000/large=%d", eps), func(b *testing.B) {
			for b.Loop() {
				largeServiceScenario(b, eps, alone, burst)
			}
		})
	}
}

func largeServiceScenario(b *testing.B, eps, alone, burst int) {
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
	b.ReportMetric(cold.Seconds(), "cold-sync-s")
	b.ReportMetric(float64(buckets), "buckets-in-ovs")
	largeChanges(b, ctx, d, tr, versions, alone, isolatedGap).report(b, "")
	largeChanges(b, ctx, d, tr, versions, burst, 0).report(b, "burst-")
}

// isolatedGap is the idle time before each change of the isolated phase:
// more than OVS's 5 ms between the starts of two revalidator rounds
// (ovs/vswitchd/settle.go), so that a change never waits for the previous one's
// round, as a change that arrives alone does not.
const isolatedGap = 20 * time.Millisecond

// largeChangeTimes are one phase's timings of the large Service's changes.
type largeChangeTimes struct {
	change, apply, core, inOVS, settle []time.Duration
	own                                []time.Duration // apply less inOVS and settle
	flowMods, groupMods                float64         // per change
}

// largeChanges applies the versions in turn, each after gap of idle time
// (0: back to back), timing each from the slice reaching the core until
// the datapath followed.
func largeChanges(b *testing.B, ctx context.Context, d *Driver, tr *tracker.Tracker,
	versions []*object.EndpointSlice, changes int, gap time.Duration) largeChangeTimes {
	var t largeChangeTimes
	bundles := newBundleClock(b, d)
	before := d.conn.Stats()
	for i := range changes {
		time.Sleep(gap)
		t0 := time.Now()
		tr.UpsertEndpointSlice(versions[i%2])
		bt := tr.Next(false)
		t1 := time.Now()
		if err := d.Apply(ctx, bt.Delta); err != nil {
			b.Fatal(err)
		}
		t.apply = append(t.apply, time.Since(t1))
		t.core = append(t.core, t1.Sub(t0))
		t.change = append(t.change, time.Since(t0))
		commit, settled := bundles.since(b)
		t.inOVS = append(t.inOVS, commit)
		t.settle = append(t.settle, settled)
		t.own = append(t.own, t.apply[i]-t.inOVS[i]-t.settle[i])
		tr.Commit(bt)
	}
	after := d.conn.Stats()
	t.flowMods = float64(after.FlowMods-before.FlowMods) / float64(changes)
	t.groupMods = float64(after.GroupMods-before.GroupMods) / float64(changes)
	return t
}

// report reports the phase's metrics, their units prefixed with prefix.
func (t largeChangeTimes) report(b *testing.B, prefix string) {
	for _, m := range []struct {
		unit string
		ds   []time.Duration
		p    int
	}{
		{"change-p50-ms", t.change, 50}, {"change-p99-ms", t.change, 99},
		{"apply-p50-ms", t.apply, 50}, {"apply-p99-ms", t.apply, 99},
		{"in-ovs-p50-ms", t.inOVS, 50}, {"in-ovs-p99-ms", t.inOVS, 99},
		{"settle-p50-ms", t.settle, 50}, {"settle-p99-ms", t.settle, 99},
		{"own-p99-ms", t.own, 99},
		{"core-p50-ms", t.core, 50}, {"core-p99-ms", t.core, 99},
	} {
		b.ReportMetric(percentile(m.ds, m.p), prefix+m.unit)
	}
	b.ReportMetric(t.flowMods, prefix+"flow-mods/change")
	b.ReportMetric(t.groupMods, prefix+"group-mods/change")
}
