// Package metrics declares the core's metrics once, with kube-proxy's names
// where the meaning is the same, and an Observer that turns tracker, source
// and runner events into log lines and metric updates.
package metrics

import (
	"github.com/switchyard-proxy/switchyard/core/build"
	"k8s.io/component-base/metrics"
)

// Metrics holds every metric the core updates.
type Metrics struct {
	SyncDuration       *metrics.HistogramVec
	LastSyncTimestamp  *metrics.Gauge
	NetworkProgramming *metrics.Histogram
	EndpointChanges    *metrics.Counter
	ServiceChanges     *metrics.Counter
	Rejected           *metrics.CounterVec
	ApplyErrors        *metrics.CounterVec
	PendingChanges     *metrics.Gauge
	Degraded           *metrics.GaugeVec
}

// New declares the metrics; Register them with a registry before use.
func New() *Metrics {
	return &Metrics{
		SyncDuration: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Subsystem:      "kubeproxy",
			Name:           "sync_proxy_rules_duration_seconds",
			Help:           "Time a driver took to apply one batch (full sync or delta), in seconds.",
			Buckets:        metrics.ExponentialBuckets(0.0001, 2, 18),
			StabilityLevel: metrics.ALPHA,
		}, []string{"kind"}),
		LastSyncTimestamp: metrics.NewGauge(&metrics.GaugeOpts{
			Subsystem:      "kubeproxy",
			Name:           "sync_proxy_rules_last_timestamp_seconds",
			Help:           "The last time a batch was applied successfully, in Unix seconds.",
			StabilityLevel: metrics.ALPHA,
		}),
		NetworkProgramming: metrics.NewHistogram(&metrics.HistogramOpts{
			Subsystem: "kubeproxy",
			Name:      "network_programming_duration_seconds",
			Help: "Time from a Service or EndpointSlice change (the slice's last-change-trigger-time " +
				"when set, else when the proxy saw it) to the dataplane holding it, in seconds.",
			Buckets: metrics.MergeBuckets(metrics.ExponentialBuckets(0.001, 2, 8),
				metrics.LinearBuckets(0.25, 0.25, 3), metrics.LinearBuckets(1, 1, 59),
				metrics.LinearBuckets(60, 5, 12), metrics.LinearBuckets(120, 30, 7)),
			StabilityLevel: metrics.ALPHA,
		}),
		EndpointChanges: metrics.NewCounter(&metrics.CounterOpts{
			Subsystem:      "kubeproxy",
			Name:           "sync_proxy_rules_endpoint_changes_total",
			Help:           "EndpointSlice events seen (add, update, delete).",
			StabilityLevel: metrics.ALPHA,
		}),
		ServiceChanges: metrics.NewCounter(&metrics.CounterOpts{
			Subsystem:      "kubeproxy",
			Name:           "sync_proxy_rules_service_changes_total",
			Help:           "Service events seen (add, update, delete).",
			StabilityLevel: metrics.ALPHA,
		}),
		Rejected: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      "switchyard",
			Name:           "rejected_objects_total",
			Help:           "Parts of objects refused by the core, by object kind and reason.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"kind", "reason"}),
		ApplyErrors: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      "switchyard",
			Name:           "driver_apply_errors_total",
			Help:           "Failed driver calls, by driver and kind (full or delta).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"driver", "kind"}),
		PendingChanges: metrics.NewGauge(&metrics.GaugeOpts{
			Namespace:      "switchyard",
			Name:           "sync_pending",
			Help:           "1 while changes wait for a successful apply, else 0.",
			StabilityLevel: metrics.ALPHA,
		}),
		Degraded: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Namespace: "switchyard",
			Name:      "degraded_parts",
			Help: "Parts (service ports, pods' ports) the driver holds back after the dataplane refused them, " +
				"while it programs everything else and tries them again; 0 when all is programmed.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"driver"}),
	}
}

// Register adds every metric to reg and pre-creates the rejection series,
// so each reason shows up at 0 before it first happens.
func (m *Metrics) Register(reg metrics.KubeRegistry) {
	reg.MustRegister(m.SyncDuration, m.LastSyncTimestamp, m.NetworkProgramming,
		m.EndpointChanges, m.ServiceChanges, m.Rejected, m.ApplyErrors, m.PendingChanges, m.Degraded)
	for _, r := range build.Reasons {
		kind := "Service"
		switch r {
		case build.ReasonMalformedDocument:
			kind = "Document"
		case build.ReasonMissingAddress, build.ReasonUnsupportedAddress, build.ReasonMissingServiceName, build.ReasonMissingPortName:
			kind = "EndpointSlice"
		}
		m.Rejected.WithLabelValues(kind, string(r))
	}
}
