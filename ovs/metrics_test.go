package ovs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn/ofconntest"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
)

// driverMetricValues are the driver's metrics as an operator reads them.
type driverMetricValues struct {
	OK, Refused, Failed       float64 // switchyard_ovs_bundles_total
	Confirmed                 uint64  // bundle_duration_seconds' count
	Flows, Groups             float64 // flows_installed, groups_installed
	FlowDrift, GroupDrift     float64 // drift_repaired_total
	BridgeFlows, BridgeGroups float64 // what the bridge holds, counted from its dump
}

func readMetrics(t *testing.T, md *memDriver) driverMetricValues {
	t.Helper()
	m := md.flows.metrics
	var v driverMetricValues
	var err error
	get := func(c metrics.CounterMetric) float64 {
		x, e := testutil.GetCounterMetricValue(c)
		err = e
		return x
	}
	gauge := func(g metrics.GaugeMetric) float64 {
		x, e := testutil.GetGaugeMetricValue(g)
		err = e
		return x
	}
	v.OK, v.Refused, v.Failed = get(m.bundles.WithLabelValues(bundleOK)), get(m.bundles.WithLabelValues(bundleRefused)), get(m.bundles.WithLabelValues(bundleFailed))
	v.FlowDrift, v.GroupDrift = get(m.drift.WithLabelValues("flow")), get(m.drift.WithLabelValues("group"))
	v.Flows, v.Groups = gauge(m.flows), gauge(m.groups)
	if v.Confirmed, err = testutil.GetHistogramMetricCount(m.bundleDuration.ObserverMetric); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(md.br.Dump()), "\n") {
		if strings.HasPrefix(line, "group_id=") {
			v.BridgeGroups++
		} else if line != "" {
			v.BridgeFlows++
		}
	}
	return v
}

// The driver's metrics follow what it sends and what the bridge holds: a
// bundle per commit, the installed counts equal to the bridge's, a group
// deleted behind the driver's back counted as drift when a resync finds
// and repairs it, a lost connection as a failed bundle.
func TestDriverMetrics(t *testing.T) {
	md := newMemDriver(t, ofconntest.NewBridge(), memCluster())
	md.flows.metrics.register(metrics.NewKubeRegistry(), md.conn)
	md.mustSync()
	got := readMetrics(t, md)
	if got.BridgeFlows == 0 || got.BridgeGroups == 0 {
		t.Fatalf("the bridge holds %v flows and %v groups: nothing to count", got.BridgeFlows, got.BridgeGroups)
	}
	want := driverMetricValues{OK: 1, Confirmed: 1, Flows: got.BridgeFlows, Groups: got.BridgeGroups,
		BridgeFlows: got.BridgeFlows, BridgeGroups: got.BridgeGroups}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("after the first sync (-want +got):\n%s", d)
	}

	// A group deleted behind the driver's back (OVS deletes the flow that
	// sends to it too): the resync finds both missing, counts them, and
	// puts them back.
	if err := md.br.Apply(&ofconn.Batch{GroupDeletes: md.groupsOf("ns/web:http/TCP")[:1]}); err != nil {
		t.Fatal(err)
	}
	md.mustSync()
	want.OK, want.Confirmed, want.FlowDrift, want.GroupDrift = 2, 2, 1, 1
	if d := cmp.Diff(want, readMetrics(t, md)); d != "" {
		t.Fatalf("after the repair (-want +got):\n%s", d)
	}

	// A connection lost before the commit: a failed bundle; the retry
	// reads the bridge back (no drift: nothing was applied) and commits.
	setEndpoints(md.tr, "web", "10.244.1.5")
	md.br.FailNext(ofconntest.LoseBeforeCommit)
	if err := md.apply(); err == nil {
		t.Fatal("the change went through; want it to fail")
	}
	md.mustApply()
	got = readMetrics(t, md)
	want.OK, want.Confirmed, want.Failed = 3, 3, 1
	want.Flows, want.Groups, want.BridgeFlows, want.BridgeGroups = got.BridgeFlows, got.BridgeGroups, got.BridgeFlows, got.BridgeGroups
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("after a failed bundle and its retry (-want +got):\n%s", d)
	}
}

// The connection's own counts are exported when scraped: the flow and
// group mods equal what the bridge committed.
func TestConnectionCountsAreExported(t *testing.T) {
	md := newMemDriver(t, ofconntest.NewBridge(), memCluster())
	reg := metrics.NewKubeRegistry()
	md.flows.metrics.register(reg, md.conn)
	md.mustSync()
	setEndpoints(md.tr, "web", "10.244.1.5", "10.244.1.99")
	md.mustApply()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "switchyard_ovs_") && strings.HasSuffix(f.GetName(), "_total") && len(f.GetMetric()) == 1 {
			got[f.GetName()] = f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	c := md.br.Counts()
	want := map[string]float64{
		"switchyard_ovs_flow_mods_total":          float64(c.FlowMods),
		"switchyard_ovs_group_mods_total":         float64(c.GroupMods),
		"switchyard_ovs_packet_ins_dropped_total": 0,
	}
	if c.FlowMods == 0 || c.GroupMods == 0 {
		t.Fatalf("the bridge committed %+v: nothing to count", c)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("exported counts (-want +got):\n%s", d)
	}
}
