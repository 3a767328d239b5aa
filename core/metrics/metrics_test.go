package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/runner"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
)

func TestObserverUpdatesMetrics(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	m := New()
	m.Register(reg)
	now := time.Unix(1_800_000_000, 0)
	o := &Observer{Metrics: m, Driver: "ovs", Now: func() time.Time { return now }}

	o.ObjectChanged("Service")
	o.ObjectChanged("EndpointSlice")
	o.ObjectChanged("EndpointSlice")
	o.Rejected(build.Rejection{Object: build.ObjectRef{Kind: "EndpointSlice", Namespace: "a", Name: "b"}, Reason: build.ReasonInvalidIP, Message: "x"})
	o.Synced(runner.Result{Full: false, Err: errors.New("down")})
	o.Synced(runner.Result{Full: true, Started: now.Add(-2 * time.Second), Duration: time.Second,
		ChangedAt: []time.Time{now.Add(-1500 * time.Millisecond)}})

	want := `
# HELP kubeproxy_sync_proxy_rules_endpoint_changes_total [ALPHA] EndpointSlice events seen (add, update, delete).
# TYPE kubeproxy_sync_proxy_rules_endpoint_changes_total counter
kubeproxy_sync_proxy_rules_endpoint_changes_total 2
# HELP kubeproxy_sync_proxy_rules_service_changes_total [ALPHA] Service events seen (add, update, delete).
# TYPE kubeproxy_sync_proxy_rules_service_changes_total counter
kubeproxy_sync_proxy_rules_service_changes_total 1
# HELP switchyard_driver_apply_errors_total [ALPHA] Failed driver calls, by driver and kind (full or delta).
# TYPE switchyard_driver_apply_errors_total counter
switchyard_driver_apply_errors_total{driver="ovs",kind="delta"} 1
# HELP kubeproxy_sync_proxy_rules_last_timestamp_seconds [ALPHA] The last time a batch was applied successfully, in Unix seconds.
# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge
kubeproxy_sync_proxy_rules_last_timestamp_seconds 1.799999999e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"kubeproxy_sync_proxy_rules_endpoint_changes_total", "kubeproxy_sync_proxy_rules_service_changes_total",
		"switchyard_driver_apply_errors_total", "kubeproxy_sync_proxy_rules_last_timestamp_seconds"); err != nil {
		t.Fatal(err)
	}
	v, err := testutil.GetCounterMetricValue(m.Rejected.WithLabelValues("EndpointSlice", "InvalidIP"))
	if err != nil || v != 1 {
		t.Fatalf("rejected = %v, %v", v, err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range families {
		if f.GetName() != "kubeproxy_network_programming_duration_seconds" {
			continue
		}
		found = true
		h := f.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 1 || h.GetSampleSum() != 1.5 {
			t.Fatalf("network programming: %d samples, sum %v; want 1 sample of 1.5s", h.GetSampleCount(), h.GetSampleSum())
		}
	}
	if !found {
		t.Fatal("kubeproxy_network_programming_duration_seconds not exposed")
	}
}
