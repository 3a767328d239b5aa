package ovs

import (
	"context"
	"maps"
	"net/netip"
	"sync"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// rejectCounts counts reject packet-ins by the cookie of the flow that
// sent them (a frontend without endpoints), before the packet-in rate
// limit: the count is of refused connections, answered or not.
type rejectCounts struct {
	mu       sync.Mutex
	byCookie map[uint64]uint64
}

func (r *rejectCounts) add(cookie uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byCookie == nil {
		r.byCookie = map[uint64]uint64{}
	}
	r.byCookie[cookie]++
}

func (r *rejectCounts) snapshot() map[uint64]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.byCookie)
}

// Counters implements dataplanes.Counter from OVS's group statistics: a
// new service connection goes through exactly one endpoint's bucket
// (established packets follow conntrack, not the groups), so a bucket's
// packets are the connections it sent to its endpoint. Rejects are the
// reject packet-ins, by the frontend flow that sent them. A group OVS
// replaced (its list changed) starts again from zero. ClientIP affinity's
// buckets DNAT through EndpointDNAT, so those service ports count no
// connections yet (docs/explain.md).
func (d *Driver) Counters(ctx context.Context) (map[graph.ServicePortName]dataplanes.ServicePortCounts, error) {
	d.mu.Lock()
	groups := d.model.ServicePortGroups()
	rejects := map[graph.ServicePortName]uint64{}
	for cookie, n := range d.rejects.snapshot() {
		if sp, ok := d.model.ServicePortOf(cookie); ok {
			rejects[sp] += n
		}
	}
	d.mu.Unlock()
	stats, err := d.conn.DumpGroupStats(ctx, len(groups))
	if err != nil {
		return nil, err
	}
	out := map[graph.ServicePortName]dataplanes.ServicePortCounts{}
	count := func(sp graph.ServicePortName) dataplanes.ServicePortCounts {
		c, ok := out[sp]
		if !ok {
			c.Endpoints = map[netip.AddrPort]uint64{}
		}
		return c
	}
	for _, s := range stats {
		gb, ok := groups[s.ID]
		if !ok || len(s.BucketPackets) != len(gb.Endpoints) {
			continue // not a service port's, or changed since it was read
		}
		c := count(gb.ServicePort)
		for i, n := range s.BucketPackets {
			if ep := gb.Endpoints[i]; ep.IsValid() {
				c.Endpoints[ep] += n
				c.Connections += n
			}
		}
		out[gb.ServicePort] = c
	}
	for sp, n := range rejects {
		c := count(sp)
		c.Rejected = n
		out[sp] = c
	}
	return out, nil
}
