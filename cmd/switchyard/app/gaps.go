package app

import (
	"maps"
	"slices"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
)

// gapReporter says, once per change, which service ports the driver cannot
// fully honour and why, and keeps a gauge of them per capability.
type gapReporter struct {
	driver string
	caps   dataplanes.Capabilities
	gauge  *metrics.GaugeVec
	ports  map[graph.ServicePortName][]dataplanes.Gap
	counts map[dataplanes.Capability]int
}

func newGapReporter(driver string, caps dataplanes.Capabilities) *gapReporter {
	g := &gapReporter{
		driver: driver,
		caps:   caps,
		gauge:  newUnhonouredGauge(),
		ports:  map[graph.ServicePortName][]dataplanes.Gap{},
		counts: map[dataplanes.Capability]int{},
	}
	return g
}

// register adds the gauge to reg, with a 0 series for every capability
// the driver lacks.
func (g *gapReporter) register(reg metrics.KubeRegistry) {
	reg.MustRegister(g.gauge)
	for _, c := range dataplanes.All {
		if !g.caps.Has(c) {
			g.gauge.WithLabelValues(g.driver, string(c)).Set(0)
		}
	}
}

func (g *gapReporter) sync(s graph.Snapshot) {
	dataplanes.PerServicePort{Set: g.set, Remove: g.remove}.Sync(s, maps.Keys(g.ports))
}

func (g *gapReporter) apply(d graph.Delta) {
	dataplanes.PerServicePort{Set: g.set, Remove: g.remove}.Apply(d)
}

func (g *gapReporter) set(sp *graph.ServicePort) {
	gaps := dataplanes.Unhonoured(sp, g.caps)
	old := g.ports[sp.Name]
	if slices.Equal(old, gaps) {
		return
	}
	g.count(old, -1)
	g.count(gaps, +1)
	if len(gaps) == 0 {
		delete(g.ports, sp.Name)
		klog.InfoS("Service port now fully programmed", "servicePort", sp.Name.String(), "driver", g.driver)
		return
	}
	g.ports[sp.Name] = gaps
	var what []string
	for _, x := range gaps {
		what = append(what, string(x.Capability)+" ("+x.Reason+")")
	}
	klog.InfoS("Driver cannot fully program service port", "servicePort", sp.Name.String(), "driver", g.driver,
		"missing", strings.Join(what, "; "))
}

func (g *gapReporter) remove(n graph.ServicePortName) {
	g.count(g.ports[n], -1)
	delete(g.ports, n)
}

func (g *gapReporter) count(gaps []dataplanes.Gap, delta int) {
	for _, x := range gaps {
		g.counts[x.Capability] += delta
		g.gauge.WithLabelValues(g.driver, string(x.Capability)).Set(float64(g.counts[x.Capability]))
	}
}
