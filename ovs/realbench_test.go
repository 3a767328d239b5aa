//go:build linux

package ovs

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/object"
	"github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	"k8s.io/component-base/metrics"
)

// BenchmarkRealOVS programs a synthetic cluster into a real OVS
// (userspace datapath): the cold full sync until OVS has confirmed every
// flow and group (the bundle's commit reply, then a revalidator round),
// then single endpoint changes, each timed until OVS confirms its bundle.
// Run with -benchtime 1x: every iteration is a whole scenario, and the
// per-change figures are percentiles over `changes` changes.
func BenchmarkRealOVS(b *testing.B) {
	const changes = 200
	for _, n := range []int{1000, 10000, 30000} {
		b.Run(fmt.Sprintf("services=%d/endpoints=%d", n, n*10), func(b *testing.B) {
			for b.Loop() {
				realOVSScenario(b, n, changes)
			}
		})
	}
}

// benchDriver starts a private OVS and a driver on it (no node network
// around it: for what the bridge holds, not for traffic).
func benchDriver(b testing.TB, ctx context.Context) (*ovstest.OVS, *Driver) {
	o := ovstest.Start(b)
	opts := testOptions()
	opts.Bridge, opts.RunDir, opts.DatapathType = bridge, o.Dir, "netdev"
	opts.HostNetNS, opts.NodeFile = "/var/run/netns/"+o.NS, o.Dir+"/node.json" // never this machine's own
	// Registered as the command registers them: benchmarks read the
	// bundle and settle times from the histograms (bundleClock).
	d, err := newDriver(ctx, opts, dataplanes.Env{Metrics: metrics.NewKubeRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	return o, d
}

// timedChange hands the driver one slice's new version and returns how
// long its Apply took.
func timedChange(b *testing.B, ctx context.Context, d *Driver, tr *tracker.Tracker, v *object.EndpointSlice) time.Duration {
	tr.UpsertEndpointSlice(v)
	bt := tr.Next(false)
	t0 := time.Now()
	if err := d.Apply(ctx, bt.Delta); err != nil {
		b.Fatal(err)
	}
	took := time.Since(t0)
	tr.Commit(bt)
	return took
}

// percentile is the p-th percentile of ds, in ms.
func percentile(ds []time.Duration, p int) float64 {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return float64(ds[(len(ds)-1)*p/100].Microseconds()) / 1000
}

func realOVSScenario(b *testing.B, n, changes int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	o, d := benchDriver(b, ctx)

	c := testobj.Synthetic(n, 10)
	tr := tracker.New(tracker.Options{NodeName: "node-0"})
	c.Feed(tr)
	full := tr.Next(true)
	// CPU time of ovs-vswitchd and of this process (the driver) over the
	// cold sync: where its time goes on a 2-core machine.
	cpu := func() (vs, self time.Duration) {
		var err error
		if vs, err = o.VswitchdCPU(); err == nil {
			self, err = ovstest.ProcessCPU(os.Getpid())
		}
		if err != nil {
			b.Fatal(err)
		}
		return vs, self
	}
	vs0, self0 := cpu()
	bundles := newBundleClock(b, d)
	start := time.Now()
	if err := d.Sync(ctx, full.Snapshot); err != nil {
		b.Fatal(err)
	}
	cold := time.Since(start)
	vs1, self1 := cpu()
	tr.Commit(full)
	flows := strings.Count(o.Ofctl("dump-flows", bridge), "cookie=0x5359")

	target := c.Slices[n/2]
	flipped := target.DeepCopy()
	notReady := false
	flipped.Endpoints[3].Conditions.Ready = &notReady
	// Converted once, as a source hands them over: the core's work is measured.
	versions := []*object.EndpointSlice{object.EndpointSliceOf(flipped), object.EndpointSliceOf(target)}
	before := d.conn.Stats()
	coldCommit, coldSettle := bundles.since(b)
	took := make([]time.Duration, 0, changes)
	inOVS := make([]time.Duration, 0, changes)
	settle := make([]time.Duration, 0, changes)
	for i := range changes {
		took = append(took, timedChange(b, ctx, d, tr, versions[i%2]))
		commit, settled := bundles.since(b)
		inOVS = append(inOVS, commit)
		settle = append(settle, settled)
	}
	after := d.conn.Stats()

	// A periodic full resync with nothing changed: what it costs, and that
	// it sends nothing.
	again := tr.Next(true)
	t0 := time.Now()
	if err := d.Sync(ctx, again.Snapshot); err != nil {
		b.Fatal(err)
	}
	resync := time.Since(t0)
	tr.Commit(again)
	resynced := d.conn.Stats()
	b.ReportMetric(float64(resync.Microseconds())/1000, "resync-ms")
	b.ReportMetric(float64(resynced.FlowMods-after.FlowMods+resynced.GroupMods-after.GroupMods), "resync-flow-mods")
	auditUnderChanges(b, ctx, o, d, tr, versions)
	pct := percentile
	b.ReportMetric(cold.Seconds(), "cold-sync-s")
	b.ReportMetric(coldCommit.Seconds(), "cold-in-ovs-s")
	b.ReportMetric(coldSettle.Seconds(), "cold-settle-s")
	b.ReportMetric((vs1 - vs0).Seconds(), "cold-vswitchd-cpu-s")
	b.ReportMetric((self1 - self0).Seconds(), "cold-driver-cpu-s")
	b.ReportMetric(float64(flows), "flows-in-ovs")
	// A change: until OVS confirmed its bundle (in-ovs), until the
	// datapath's revalidators had run too (settle), and the whole Apply.
	b.ReportMetric(pct(inOVS, 50), "in-ovs-p50-ms")
	b.ReportMetric(pct(inOVS, 99), "in-ovs-p99-ms")
	b.ReportMetric(pct(settle, 50), "settle-p50-ms")
	b.ReportMetric(pct(settle, 99), "settle-p99-ms")
	b.ReportMetric(pct(took, 50), "apply-p50-ms")
	b.ReportMetric(pct(took, 99), "apply-p99-ms")
	b.ReportMetric(float64(after.FlowMods-before.FlowMods)/float64(changes), "flow-mods/change")
	b.ReportMetric(float64(after.GroupMods-before.GroupMods)/float64(changes), "group-mods/change")
}
