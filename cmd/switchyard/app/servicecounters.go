package app

import (
	"cmp"
	"context"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"
)

// maxServiceCounters bounds --service-counters: at most this many service
// ports get series, so at most ~340k series however large the cluster.
const maxServiceCounters = 5000

// endpointSeriesCap is how many endpoints of one service port get a
// series of their own; the rest are summed under endpoint="other".
const endpointSeriesCap = 64

// serviceCounters exports, when scraped, what the driver's dataplane
// counted per service port (dataplanes.Counter), for at most limit
// service ports: the busiest by connections (ties by name), the others
// counted in switchyard_service_counters_omitted. The series' count is
// bounded by limit × (endpointSeriesCap + 4) + 2 (docs/explain.md).
type serviceCounters struct {
	metrics.BaseStableCollector
	counter dataplanes.Counter
	limit   int
}

var (
	connectionsDesc = metrics.NewDesc("switchyard_service_port_connections_total",
		"New connections the dataplane load-balanced for a service port (--service-counters).", []string{"service_port"}, nil, metrics.ALPHA, "")
	endpointConnectionsDesc = metrics.NewDesc("switchyard_service_endpoint_connections_total",
		"New connections the dataplane sent to an endpoint of a service port (--service-counters; endpoint=\"other\" sums those past the cap).",
		[]string{"service_port", "endpoint"}, nil, metrics.ALPHA, "")
	rejectedDesc = metrics.NewDesc("switchyard_service_port_rejected_total",
		"New connections the dataplane refused for a service port with no usable endpoint (--service-counters).", []string{"service_port"}, nil, metrics.ALPHA, "")
	droppedDesc = metrics.NewDesc("switchyard_service_port_dropped_total",
		"Packets opening a connection the dataplane dropped for a service port: no endpoint this traffic may use, or a source outside loadBalancerSourceRanges (--service-counters).",
		[]string{"service_port"}, nil, metrics.ALPHA, "")
	omittedDesc = metrics.NewDesc("switchyard_service_counters_omitted",
		"Service ports with counts left out of the service port series by --service-counters' cap.", nil, nil, metrics.ALPHA, "")
	countersFailedDesc = metrics.NewDesc("switchyard_service_counters_read_failed",
		"1 when the last scrape could not read the dataplane's counters.", nil, nil, metrics.ALPHA, "")
)

// DescribeWithStability implements metrics.StableCollector.
func (c *serviceCounters) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{connectionsDesc, endpointConnectionsDesc, rejectedDesc, droppedDesc, omittedDesc, countersFailedDesc} {
		ch <- d
	}
}

// CollectWithStability implements metrics.StableCollector.
func (c *serviceCounters) CollectWithStability(ch chan<- metrics.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	counts, err := c.counter.Counters(ctx)
	failed := 0.0
	if err != nil {
		klog.V(2).InfoS("Cannot read the dataplane's service counters", "err", err)
		failed = 1
	}
	ch <- metrics.NewLazyConstMetric(countersFailedDesc, metrics.GaugeValue, failed)
	kept := busiest(counts, c.limit)
	ch <- metrics.NewLazyConstMetric(omittedDesc, metrics.GaugeValue, float64(len(counts)-len(kept)))
	for _, sp := range kept {
		n, name := counts[sp], sp.String()
		ch <- metrics.NewLazyConstMetric(connectionsDesc, metrics.CounterValue, float64(n.Connections), name)
		ch <- metrics.NewLazyConstMetric(rejectedDesc, metrics.CounterValue, float64(n.Rejected), name)
		ch <- metrics.NewLazyConstMetric(droppedDesc, metrics.CounterValue, float64(n.Dropped), name)
		eps, other := topEndpoints(n.Endpoints, endpointSeriesCap)
		for _, ep := range eps {
			ch <- metrics.NewLazyConstMetric(endpointConnectionsDesc, metrics.CounterValue, float64(n.Endpoints[ep]), name, ep.String())
		}
		if other > 0 {
			ch <- metrics.NewLazyConstMetric(endpointConnectionsDesc, metrics.CounterValue, float64(other), name, "other")
		}
	}
}

// busiest lists at most limit service ports, by connections, rejects and
// drops together, descending, ties by name.
func busiest(counts map[graph.ServicePortName]dataplanes.ServicePortCounts, limit int) []graph.ServicePortName {
	names := slices.SortedFunc(maps.Keys(counts), func(a, b graph.ServicePortName) int {
		ca, cb := counts[a], counts[b]
		return cmp.Or(cmp.Compare(cb.Connections+cb.Rejected+cb.Dropped, ca.Connections+ca.Rejected+ca.Dropped), cmp.Compare(a.String(), b.String()))
	})
	return names[:min(limit, len(names))]
}

// topEndpoints lists at most limit endpoints by connections descending
// (ties by address), and sums the rest.
func topEndpoints(eps map[netip.AddrPort]uint64, limit int) ([]netip.AddrPort, uint64) {
	all := slices.SortedFunc(maps.Keys(eps), func(a, b netip.AddrPort) int {
		return cmp.Or(cmp.Compare(eps[b], eps[a]), a.Compare(b))
	})
	var other uint64
	for _, ep := range all[min(limit, len(all)):] {
		other += eps[ep]
	}
	return all[:min(limit, len(all))], other
}
