package app

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
)

// fakeCounter answers Counters with counts (or err).
type fakeCounter struct {
	counts map[graph.ServicePortName]dataplanes.ServicePortCounts
	err    error
}

func (f fakeCounter) Counters(context.Context) (map[graph.ServicePortName]dataplanes.ServicePortCounts, error) {
	return f.counts, f.err
}

func sp(name string) graph.ServicePortName {
	return graph.ServicePortName{Namespace: "ns", Name: name, Port: "http", Protocol: graph.TCP}
}

// The busiest service ports within the cap, each with its endpoints
// (those past the endpoint cap summed as "other"), rejects and drops; the rest
// counted as omitted; a failed read said, never a crash.
func TestServiceCountersExport(t *testing.T) {
	many := map[netip.AddrPort]uint64{}
	for i := range endpointSeriesCap + 2 {
		many[netip.MustParseAddrPort(fmt.Sprintf("10.0.%d.%d:80", i/200, i%200+1))] = uint64(100 + i)
	}
	counts := map[graph.ServicePortName]dataplanes.ServicePortCounts{
		sp("quiet"):    {Connections: 1, Endpoints: map[netip.AddrPort]uint64{netip.MustParseAddrPort("10.1.0.1:80"): 1}},
		sp("busy"):     {Connections: 9000, Endpoints: many},
		sp("empty"):    {Rejected: 5},
		sp("filtered"): {Dropped: 3},
	}
	reg := metrics.NewKubeRegistry()
	reg.CustomMustRegister(&serviceCounters{counter: fakeCounter{counts: counts}, limit: 3})
	want := `
# HELP switchyard_service_counters_omitted [ALPHA] Service ports with counts left out of the service port series by --service-counters' cap.
# TYPE switchyard_service_counters_omitted gauge
switchyard_service_counters_omitted 1
# HELP switchyard_service_counters_read_failed [ALPHA] 1 when the last scrape could not read the dataplane's counters.
# TYPE switchyard_service_counters_read_failed gauge
switchyard_service_counters_read_failed 0
# HELP switchyard_service_port_connections_total [ALPHA] New connections the dataplane load-balanced for a service port (--service-counters).
# TYPE switchyard_service_port_connections_total counter
switchyard_service_port_connections_total{service_port="ns/busy:http/TCP"} 9000
switchyard_service_port_connections_total{service_port="ns/empty:http/TCP"} 0
switchyard_service_port_connections_total{service_port="ns/filtered:http/TCP"} 0
# HELP switchyard_service_port_dropped_total [ALPHA] Packets opening a connection the dataplane dropped for a service port: no endpoint this traffic may use, or a source outside loadBalancerSourceRanges (--service-counters).
# TYPE switchyard_service_port_dropped_total counter
switchyard_service_port_dropped_total{service_port="ns/busy:http/TCP"} 0
switchyard_service_port_dropped_total{service_port="ns/empty:http/TCP"} 0
switchyard_service_port_dropped_total{service_port="ns/filtered:http/TCP"} 3
# HELP switchyard_service_port_rejected_total [ALPHA] New connections the dataplane refused for a service port with no usable endpoint (--service-counters).
# TYPE switchyard_service_port_rejected_total counter
switchyard_service_port_rejected_total{service_port="ns/busy:http/TCP"} 0
switchyard_service_port_rejected_total{service_port="ns/empty:http/TCP"} 5
switchyard_service_port_rejected_total{service_port="ns/filtered:http/TCP"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "switchyard_service_counters_omitted", "switchyard_service_counters_read_failed",
		"switchyard_service_port_connections_total", "switchyard_service_port_rejected_total", "switchyard_service_port_dropped_total"); err != nil {
		t.Error(err)
	}
	// The endpoint series: the cap's busiest, and the two least busy as
	// "other" (100 + 101).
	got, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series, other := 0, -1.0
	for _, mf := range got {
		if mf.GetName() != "switchyard_service_endpoint_connections_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			series++
			for _, l := range m.GetLabel() {
				if l.GetName() == "endpoint" && l.GetValue() == "other" {
					other = m.GetCounter().GetValue()
				}
			}
		}
	}
	if series != endpointSeriesCap+1 || other != 201 {
		t.Errorf("%d endpoint series, other = %v; want %d and 201", series, other, endpointSeriesCap+1)
	}

	failing := metrics.NewKubeRegistry()
	failing.CustomMustRegister(&serviceCounters{counter: fakeCounter{err: errors.New("dataplane down")}, limit: 2})
	if err := testutil.GatherAndCompare(failing, strings.NewReader(`
# HELP switchyard_service_counters_read_failed [ALPHA] 1 when the last scrape could not read the dataplane's counters.
# TYPE switchyard_service_counters_read_failed gauge
switchyard_service_counters_read_failed 1
`), "switchyard_service_counters_read_failed"); err != nil {
		t.Error(err)
	}
}
