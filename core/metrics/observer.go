package metrics

import (
	"time"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/runner"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"k8s.io/klog/v2"
)

// Observer logs and counts what the tracker, the sources and the runner
// report. It implements tracker.Observer and runner.Observer.
type Observer struct {
	Metrics *Metrics
	Driver  string
	Now     func() time.Time // nil: time.Now
	// OnSync, if set, also hears every sync result (health checks use it).
	OnSync func(runner.Result)
}

var (
	_ tracker.Observer = (*Observer)(nil)
	_ runner.Observer  = (*Observer)(nil)
)

// Rejected logs a refused part of an object and counts it.
func (o *Observer) Rejected(r build.Rejection) {
	klog.ErrorS(nil, "Object refused", "object", r.Object.String(), "field", r.Field, "reason", r.Reason, "detail", r.Message)
	o.Metrics.Rejected.WithLabelValues(r.Object.Kind, string(r.Reason)).Inc()
}

// ObjectChanged counts Service and EndpointSlice events.
func (o *Observer) ObjectChanged(kind string) {
	switch kind {
	case "Service":
		o.Metrics.ServiceChanges.Inc()
	case "EndpointSlice":
		o.Metrics.EndpointChanges.Inc()
	}
}

// Synced records one sync attempt.
func (o *Observer) Synced(r runner.Result) {
	kind := "delta"
	if r.Full {
		kind = "full"
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	if r.Err != nil {
		klog.ErrorS(r.Err, "Dataplane sync failed; will retry", "driver", o.Driver, "kind", kind, "servicePorts", r.Changed)
		o.Metrics.ApplyErrors.WithLabelValues(o.Driver, kind).Inc()
		o.Metrics.PendingChanges.Set(1)
	} else {
		klog.V(2).InfoS("Dataplane synced", "driver", o.Driver, "kind", kind, "servicePorts", r.Changed, "elapsed", r.Duration)
		o.Metrics.SyncDuration.WithLabelValues(kind).Observe(r.Duration.Seconds())
		// Sub-second, as upstream's SetToCurrentTime.
		o.Metrics.LastSyncTimestamp.Set(float64(r.Started.Add(r.Duration).UnixNano()) / 1e9)
		o.Metrics.PendingChanges.Set(0)
		o.Metrics.Degraded.WithLabelValues(o.Driver).Set(float64(len(r.Degraded)))
		if len(r.Degraded) > 0 {
			klog.V(2).InfoS("Dataplane synced, some parts held back and retried", "driver", o.Driver, "kind", kind,
				"held", len(r.Degraded), "first", r.Degraded[0])
		}
		t := now()
		for _, at := range r.ChangedAt {
			if !at.IsZero() {
				o.Metrics.NetworkProgramming.Observe(t.Sub(at).Seconds())
			}
		}
	}
	if o.OnSync != nil {
		o.OnSync(r)
	}
}
