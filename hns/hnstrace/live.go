package hnstrace

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

func init() { hns.RegisterLiveEvaluator(liveTrace) }

// LiveResult is what the simulator's rules make of a live HNS's objects.
type LiveResult struct {
	Result
	// Version is the HNS version live reports (the simulator takes it).
	Version hns.Version
	// LoadBalancers is how many load balancers live holds; NotLoaded says
	// why the simulator refused each it could not take (a rule of its own
	// that live HNS does not apply, or an object it does not model).
	LoadBalancers int
	NotLoaded     []string
}

// Live reads, through live (read-only), the network's endpoints and every
// load balancer, loads copies into a fresh simulator of live's HNS version
// with the node's addresses, and evaluates conns connections like c
// there. On Windows live is hcn: the verdict is the simulator's rules
// applied to the objects Windows holds, not Windows' own.
func Live(ctx context.Context, live hns.Client, network string, nodeIPs []netip.Addr, c graph.Connection, conns int) (LiveResult, error) {
	f, err := live.Features()
	if err != nil {
		return LiveResult{}, fmt.Errorf("reading HNS's version: %w", err)
	}
	n, err := live.Network(network)
	if err != nil {
		return LiveResult{}, fmt.Errorf("reading network %s: %w", network, err)
	}
	eps, err := live.Endpoints(n.ID)
	if err != nil {
		return LiveResult{}, fmt.Errorf("reading network %s's endpoints: %w", network, err)
	}
	lbs, err := live.LoadBalancers()
	if err != nil {
		return LiveResult{}, fmt.Errorf("reading the load balancers: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return LiveResult{}, err
	}
	sim := hnssim.New(hnssim.Windows2025)
	sim.SetVersion(f.Version)
	simNet := sim.AddNetwork(n.Name, n.Type, n.RemoteSubnets...)
	for _, ip := range nodeIPs {
		sim.AddHostIP(ip)
	}
	r := LiveResult{Result: Result{Network: n.Type}, Version: f.Version, LoadBalancers: len(lbs)}
	ids := map[string]string{} // live endpoint ID -> the copy's
	for _, ep := range eps {
		cp, err := sim.CreateEndpoint(simNet.ID, &ep)
		if err != nil {
			r.NotLoaded = append(r.NotLoaded, fmt.Sprintf("endpoint %s (%s): %v", ep.ID, ep.IP(), err))
			continue
		}
		ids[strings.ToLower(ep.ID)] = cp.ID
	}
	for _, lb := range lbs {
		cp := lb.Clone()
		for i, id := range cp.HostComputeEndpoints {
			if mine, ok := ids[strings.ToLower(id)]; ok {
				cp.HostComputeEndpoints[i] = mine
			}
		}
		if _, err := sim.CreateLoadBalancer(cp); err != nil {
			r.NotLoaded = append(r.NotLoaded, fmt.Sprintf("load balancer %s (%s): %v", lb.ID, strings.Join(lb.FrontendVIPs, ","), err))
		}
	}
	evaluate(sim, nodeIPs, c, conns, &r.Result)
	return r, nil
}

// liveTrace is the hns driver's hns.LiveEvaluator: Live, as a
// dataplanes.Trace.
func liveTrace(ctx context.Context, live hns.Client, network string, nodeIPs []netip.Addr, c graph.Connection, conns int) (dataplanes.Trace, error) {
	r, err := Live(ctx, live, network, nodeIPs, c, conns)
	if err != nil {
		return dataplanes.Trace{}, err
	}
	t := dataplanes.Trace{Reached: r.Verdicts, Backends: r.Backends(), SrcSeen: r.SrcSeen, DSR: r.DSR,
		Model: fmt.Sprintf("the HNS simulator's rules (hnssim: each names its source or says assumed) over the %d load balancers and %s network %s the live HNS %d.%d holds",
			r.LoadBalancers, r.Network, network, r.Version.Major, r.Version.Minor)}
	if len(r.NotLoaded) > 0 {
		t.Note = fmt.Sprintf("the simulator could not take %d live objects, left out of the verdict: %s", len(r.NotLoaded), strings.Join(r.NotLoaded, "; "))
	}
	return t, nil
}
