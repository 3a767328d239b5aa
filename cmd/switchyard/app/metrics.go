package app

import "k8s.io/component-base/metrics"

// The command's own metrics; the core's are in core/metrics.

// problemsTotal counts what drivers report they cannot program as asked.
var problemsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace:      "switchyard",
	Name:           "service_port_problems_total",
	Help:           "Problems a driver reported for a service port (each reported once), by driver and reason.",
	StabilityLevel: metrics.ALPHA,
}, []string{"driver", "reason"})

// newUnhonouredGauge declares the gauge of service ports a driver cannot
// fully program (the gap reporter keeps it).
func newUnhonouredGauge() *metrics.GaugeVec {
	return metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      "switchyard",
		Name:           "unhonoured_service_ports",
		Help:           "Service ports the driver cannot fully program, by missing capability.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver", "capability"})
}
