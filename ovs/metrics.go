package ovs

import (
	"time"

	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"k8s.io/component-base/metrics"
)

// driverMetrics are what the driver tells an operator about its bridge:
// every commit, how long OVS took to confirm it, what it holds, and the
// drift a read-back found. One set per driver, registered with the
// command's registry (dataplanes.Env.Metrics); unregistered, updates do
// nothing.
type driverMetrics struct {
	bundles        *metrics.CounterVec
	bundleDuration *metrics.Histogram
	settleDuration *metrics.Histogram
	flows          *metrics.Gauge
	groups         *metrics.Gauge
	drift          *metrics.CounterVec
	audits         *metrics.HistogramVec
}

// Bundle results (switchyard_ovs_bundles_total's result label).
const (
	bundleOK      = "ok"      // committed
	bundleRefused = "refused" // OVS refused a message: the bridge kept what it had
	bundleFailed  = "failed"  // the connection or OVS failed: the next commit reads the bridge back
)

func newDriverMetrics() *driverMetrics {
	return &driverMetrics{
		bundles: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: "switchyard", Subsystem: "ovs", Name: "bundles_total",
			Help:           "Non-empty OpenFlow bundles sent to the bridge, by result: ok, refused (OVS refused a message and kept what it had), failed (the connection or OVS failed; the next commit reads the bridge back).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"result"}),
		bundleDuration: metrics.NewHistogram(&metrics.HistogramOpts{
			Namespace: "switchyard", Subsystem: "ovs", Name: "bundle_duration_seconds",
			Help:           "Time from sending a non-empty bundle until OVS confirmed its commit, in seconds (the datapath's settle after it not included).",
			Buckets:        metrics.ExponentialBuckets(0.0001, 2, 18),
			StabilityLevel: metrics.ALPHA,
		}),
		settleDuration: metrics.NewHistogram(&metrics.HistogramOpts{
			Namespace: "switchyard", Subsystem: "ovs", Name: "datapath_settle_seconds",
			Help:           "Time from OVS confirming a non-empty bundle until its datapath follows the new flows (a revalidator round, or a purge after a large bundle), in seconds; only with a datapath.",
			Buckets:        metrics.ExponentialBuckets(0.0001, 2, 18),
			StabilityLevel: metrics.ALPHA,
		}),
		flows: metrics.NewGauge(&metrics.GaugeOpts{
			Namespace: "switchyard", Subsystem: "ovs", Name: "flows_installed",
			Help:           "The driver's flows the bridge holds, as of its last commit or read-back (learned flows not counted).",
			StabilityLevel: metrics.ALPHA,
		}),
		groups: metrics.NewGauge(&metrics.GaugeOpts{
			Namespace: "switchyard", Subsystem: "ovs", Name: "groups_installed",
			Help:           "The driver's groups the bridge holds, as of its last commit or read-back.",
			StabilityLevel: metrics.ALPHA,
		}),
		drift: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace: "switchyard", Subsystem: "ovs", Name: "drift_repaired_total",
			Help:           "Flows and groups a read-back found other than the driver had installed (removed or changed behind its back, or lost with ovs-vswitchd), by kind; each is then repaired.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"kind"}),
		audits: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Namespace: "switchyard", Subsystem: "ovs", Name: "audit_duration_seconds",
			Help:           "How long the periodic audit took to read the bridge and sync the host, off the change path, by result: ok, failed (the next round reads the bridge back in full).",
			Buckets:        metrics.ExponentialBuckets(0.01, 2, 14),
			StabilityLevel: metrics.ALPHA,
		}, []string{"result"}),
	}
}

// audited records an audit's time.
func (m *driverMetrics) audited(took time.Duration, failed bool) {
	result := "ok"
	if failed {
		result = "failed"
	}
	m.audits.WithLabelValues(result).Observe(took.Seconds())
}

// register adds the metrics, and conn's counts, to reg (nil: nowhere).
func (m *driverMetrics) register(reg metrics.KubeRegistry, conn *ofconn.Conn) {
	if reg == nil {
		return
	}
	reg.MustRegister(m.bundles, m.bundleDuration, m.settleDuration, m.flows, m.groups, m.drift, m.audits)
	reg.CustomMustRegister(newConnCollector(conn))
	for _, r := range []string{bundleOK, bundleRefused, bundleFailed} {
		m.bundles.WithLabelValues(r) // show the series at 0
	}
	for _, k := range []string{"flow", "group"} {
		m.drift.WithLabelValues(k)
	}
}

// sent records a non-empty bundle.
func (m *driverMetrics) sent(result string, took time.Duration) {
	m.bundles.WithLabelValues(result).Inc()
	if result == bundleOK {
		m.bundleDuration.Observe(took.Seconds())
	}
}

// settled records how long the datapath took to follow a bundle.
func (m *driverMetrics) settled(took time.Duration) { m.settleDuration.Observe(took.Seconds()) }

// installed records what the bridge holds.
func (m *driverMetrics) installed(st *engine.State) {
	m.flows.Set(float64(st.InstalledFlows()))
	m.groups.Set(float64(st.InstalledGroups()))
}
