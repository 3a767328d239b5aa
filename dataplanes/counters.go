package dataplanes

import (
	"context"
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// Counter is a running driver whose dataplane counts what it did per
// service port (`--service-counters`, and `switchyard explain` with
// --dataplane). The counts are the dataplane's own, since it programmed
// them: they go back to zero when the dataplane rebuilds what counts them.
type Counter interface {
	Counters(ctx context.Context) (map[graph.ServicePortName]ServicePortCounts, error)
}

// ServicePortCounts is what a dataplane counted for one service port.
type ServicePortCounts struct {
	// Connections: new connections load-balanced to an endpoint.
	Connections uint64
	// Endpoints: those connections by endpoint, where the dataplane can
	// tell them apart.
	Endpoints map[netip.AddrPort]uint64
	// Rejected: new connections refused because no endpoint is usable.
	Rejected uint64
	// Dropped: packets opening a connection that were dropped without an
	// answer (no endpoint this traffic may use, or a source outside
	// loadBalancerSourceRanges). A client retrying counts once a try.
	Dropped uint64
}
