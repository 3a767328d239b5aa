package hns

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"sync"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// LiveEvaluator says what an HNS does with new connections like c (another
// source port each), from the objects live holds now: its network's
// endpoints and its load balancers, whoever made them. hns/hnstrace
// registers the HNS simulator's rules as one; on Windows, live is hcn.
type LiveEvaluator func(ctx context.Context, live Client, network string, nodeIPs []netip.Addr, c graph.Connection, conns int) (dataplanes.Trace, error)

var (
	liveMu        sync.RWMutex
	liveEvaluator LiveEvaluator
)

// RegisterLiveEvaluator makes f the evaluator the driver's TraceLive uses
// (hns/hnstrace's init; cmd/switchyard/builtin imports it).
func RegisterLiveEvaluator(f LiveEvaluator) {
	liveMu.Lock()
	defer liveMu.Unlock()
	liveEvaluator = f
}

// errNoEvaluator: a binary that links the HNS driver without hns/hnstrace.
var errNoEvaluator = errors.New("this binary links no evaluator of HNS objects (import github.com/switchyard-proxy/switchyard/hns/hnstrace)")

// TraceLive implements dataplanes.LiveTracer: the registered evaluator
// reads the live HNS objects of the driver's network through the driver's
// client (read-only) and says what they do with conns connections like c.
// What HNS holds is what is judged, not what the driver meant: a load
// balancer deleted behind the driver's back shows.
func (d *Driver) TraceLive(ctx context.Context, c graph.Connection, conns int) (dataplanes.Trace, error) {
	liveMu.RLock()
	f := liveEvaluator
	liveMu.RUnlock()
	if f == nil {
		return dataplanes.Trace{}, errNoEvaluator
	}
	d.mu.Lock()
	nodeIPs := slices.Clone(d.nodeIPs)
	d.mu.Unlock()
	return f(ctx, d.c, d.opts.NetworkName, nodeIPs, c, conns)
}
