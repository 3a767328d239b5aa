package ovs

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	"github.com/switchyard-proxy/switchyard/core/source/file"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/component-base/metrics/testutil"
)

// exampleSnapshot is examples/cluster.yaml seen from node-1, plus an
// SCTP dual-stack service with affinity (the example has none).
func exampleSnapshot(t *testing.T) graph.Snapshot {
	t.Helper()
	tr := tracker.New(tracker.Options{NodeName: "node-1", Peers: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := (&file.Source{Path: "../examples/cluster.yaml"}).Start(ctx, tr); err != nil {
		t.Fatal(err)
	}
	s := tr.Snapshot()
	ep := func(ip string, port uint16, local bool) graph.Endpoint {
		return graph.Endpoint{IP: netip.MustParseAddr(ip), Port: port, Local: local, Ready: true, Serving: true}
	}
	s.ServicePorts = append(s.ServicePorts, &graph.ServicePort{
		Name:                  graph.ServicePortName{Namespace: "x", Name: "sctp", Port: "s", Protocol: graph.SCTP},
		ClusterIPs:            []netip.Addr{netip.MustParseAddr("10.96.50.1"), netip.MustParseAddr("fd00:96::50:1")},
		Port:                  9999,
		SessionAffinity:       graph.SessionAffinity{ClientIP: true, TimeoutSeconds: 86400},
		InternalTrafficPolicy: graph.PolicyCluster, ExternalTrafficPolicy: graph.PolicyCluster,
		InternalEndpoints: graph.EndpointListOf(ep("10.244.1.90", 9999, true), ep("fd00:244:1::90", 9999, true)),
		UsableFamilies:    graph.FamilySet(0).With(graph.IPv4).With(graph.IPv6),
	})
	return s
}

// testModel is a model over the test options' pipeline, with the
// gateway on port 1 and the tunnel on port 2 (as render shows them).
func testModel(tb testing.TB) *engine.Model {
	tb.Helper()
	opts := testOptions()
	cfg, err := opts.pipelineConfig()
	if err != nil {
		tb.Fatal(err)
	}
	m := engine.NewModel(cfg, true)
	m.SetPorts(engine.Ports{GatewayPort: 1, GatewayMAC: cfg.RouterMAC, TunnelPort: 2})
	return m
}

// withLarge adds testobj.Large's Service, on node-0, to a tracker and
// returns its slices.
func withLarge(tr *tracker.Tracker, perFamily int, dualStack bool, opts ...ServiceOption) []*discovery.EndpointSlice {
	svc, slices := Large("big", "web", "node-0", perFamily, 1000, dualStack, opts...)
	tr.UpsertService(object.ServiceOf(svc))
	for _, s := range slices {
		tr.UpsertEndpointSlice(object.EndpointSliceOf(s))
	}
	return slices
}

func testOptions() Options {
	var o Options
	fs := newFlagSet()
	o.AddFlags(fs)
	return o
}

// bundleClock reads from the driver's metrics (bundle_duration_seconds
// and datapath_settle_seconds) how long the bundles committed since its
// last reading spent until OVS confirmed them and until the datapath
// followed.
type bundleClock struct {
	m              *driverMetrics
	commit, settle float64 // the histograms' sums at the last reading
}

func newBundleClock(tb testing.TB, d *Driver) *bundleClock {
	c := &bundleClock{m: d.flows.metrics}
	if !c.m.bundleDuration.IsCreated() {
		tb.Fatal("the driver's metrics are not registered: nothing would be measured")
	}
	c.since(tb)
	return c
}

// since returns the time in OVS and settling since the last reading.
func (c *bundleClock) since(tb testing.TB) (inOVS, settle time.Duration) {
	tb.Helper()
	commit, err := testutil.GetHistogramMetricValue(c.m.bundleDuration.ObserverMetric)
	if err != nil {
		tb.Fatal(err)
	}
	settled, err := testutil.GetHistogramMetricValue(c.m.settleDuration.ObserverMetric)
	if err != nil {
		tb.Fatal(err)
	}
	inOVS, settle = seconds(commit-c.commit), seconds(settled-c.settle)
	c.commit, c.settle = commit, settled
	return inOVS, settle
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// committedModel is a test model holding the tracker's whole graph, all
// of it committed (as after a cold sync), and the bundle that sync sent.
func committedModel(tb testing.TB, tr *tracker.Tracker) (*engine.Model, *ofconn.Batch) {
	tb.Helper()
	m := testModel(tb)
	full := tr.Next(true)
	m.Sync(full.Snapshot)
	cold := m.State().Pending(engine.All)
	m.State().Committed(engine.All)
	tr.Commit(full)
	return m, cold
}
