package ovs

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/object"
	"github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
)

// BenchmarkOneEndpointChange measures what one endpoint flipping
// readiness costs the OVS driver's model, and how many OpenFlow messages
// the resulting bundle holds, at two cluster sizes: the counts must not
// grow with the cluster.
func BenchmarkOneEndpointChange(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		c := testobj.Synthetic(n, 10)
		tr := tracker.New(tracker.Options{NodeName: "node-0"})
		c.Feed(tr)
		m, cold := committedModel(b, tr)

		target := c.Slices[n/2]
		flipped := target.DeepCopy()
		notReady := false
		flipped.Endpoints[3].Conditions.Ready = &notReady
		// Converted once, as a source hands them over: the core's work is measured.
		versions := []*object.EndpointSlice{object.EndpointSliceOf(flipped), object.EndpointSliceOf(target)}
		b.Run(fmt.Sprintf("services=%d/endpoints=%d", n, n*10), func(b *testing.B) {
			b.ReportAllocs()
			var flowMods, groupMods int
			i := 0
			for b.Loop() {
				tr.UpsertEndpointSlice(versions[i%2])
				bt := tr.Next(false)
				m.Apply(bt.Delta)
				batch := m.State().Pending(engine.All)
				flowMods += len(batch.FlowAdds) + len(batch.FlowDeletes)
				groupMods += len(batch.GroupAdds) + len(batch.GroupModifies) + len(batch.GroupDeletes)
				m.State().Committed(engine.All)
				tr.Commit(bt)
				i++
			}
			b.ReportMetric(float64(flowMods)/float64(i), "flow-mods/op")
			b.ReportMetric(float64(groupMods)/float64(i), "group-mods/op")
			b.ReportMetric(float64(len(cold.FlowAdds)), "cold-flows")
			b.ReportMetric(float64(len(cold.GroupAdds)), "cold-groups")
		})
	}
}

// BenchmarkColdModel is the driver's own part of a cold full sync at 10k
// Services, without OVS: the model built from the snapshot, the bundle's
// messages built and marshalled as they would be sent.
func BenchmarkColdModel(b *testing.B) {
	c := testobj.Synthetic(10000, 10)
	tr := tracker.New(tracker.Options{NodeName: "node-0"})
	c.Feed(tr)
	full := tr.Next(true)
	opts := testOptions()
	cfg, err := opts.pipelineConfig()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m := engine.NewModel(cfg, true)
		m.SetPorts(engine.Ports{GatewayPort: 1, GatewayMAC: cfg.RouterMAC, TunnelPort: 2})
		m.Sync(full.Snapshot)
		batch := m.State().Pending(engine.All)
		n := 0
		var buf []byte
		for _, g := range batch.GroupAdds {
			buf, err = g.AppendGroupMod(buf[:0], 4, 1)
			if err != nil {
				b.Fatal(err)
			}
			n += len(buf)
		}
		for _, f := range batch.FlowAdds {
			buf, err = f.AppendFlowAdd(buf[:0], 1)
			if err != nil {
				b.Fatal(err)
			}
			n += len(buf)
		}
		b.ReportMetric(float64(n)/(1<<20), "bundle-MiB")
	}
}

// BenchmarkLargeServiceChange is what one endpoint flipping readiness in
// one large Service (next to 1k ordinary ones) costs the core (the
// tracker's delta: the Service rebuilt from its slices) and the driver's
// model (its groups rendered, the bundle built), without OVS.
func BenchmarkLargeServiceChange(b *testing.B) {
	for _, eps := range []int{1000, 10_000, 50_000} {
		c := testobj.Synthetic(1000, 10)
		tr := tracker.New(tracker.Options{NodeName: "node-0"})
		c.Feed(tr)
		slices := withLarge(tr, eps, false)
		m, _ := committedModel(b, tr)
		flipped := slices[len(slices)/2].DeepCopy()
		notReady := false
		flipped.Endpoints[3].Conditions.Ready = &notReady
		versions := []*object.EndpointSlice{object.EndpointSliceOf(flipped), object.EndpointSliceOf(slices[len(slices)/2])}
		for _, part := range []string{"core", "driver"} {
			b.Run(fmt.Sprintf("large=%d/%s", eps, part), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if part == "driver" {
						b.StopTimer()
					}
					tr.UpsertEndpointSlice(versions[i%2])
					bt := tr.Next(false)
					if part == "driver" {
						b.StartTimer()
					} else {
						b.StopTimer()
					}
					m.Apply(bt.Delta)
					m.State().Pending(engine.All)
					m.State().Committed(engine.All)
					if part == "core" {
						b.StartTimer()
					}
					tr.Commit(bt)
					i++
				}
			})
		}
	}
}

// BenchmarkServiceCounters is the model's part of one --service-counters
// scrape at 10k Services (every port's groups and counted flows rendered
// again), and the longest hold of the driver's lock it takes: the wait it
// can add to a change.
func BenchmarkServiceCounters(b *testing.B) {
	c := testobj.Synthetic(10000, 10)
	tr := tracker.New(tracker.Options{NodeName: "node-0"})
	c.Feed(tr)
	m := testModel(b)
	m.Sync(tr.Next(true).Snapshot)
	m.State().Committed(engine.All)
	b.ReportAllocs()
	var longest time.Duration
	for b.Loop() {
		for part := range slices.Chunk(m.ServicePortNames(), countingChunk) {
			start := time.Now()
			m.CountingOf(part)
			longest = max(longest, time.Since(start))
		}
	}
	b.ReportMetric(float64(longest.Microseconds())/1000, "longest-lock-ms")
}
