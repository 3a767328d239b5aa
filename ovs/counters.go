package ovs

import (
	"context"
	"maps"
	"net/netip"
	"slices"
	"sync"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
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

// countingChunk is how many service ports Counters renders again per
// hold of the driver's lock (~25 µs each at 10k Services: docs/explain.md),
// so that a change waits a few milliseconds at most, not the whole read.
const countingChunk = 128

// Counters implements dataplanes.Counter from OVS's statistics. Only a
// connection's first packet goes through ServiceLB and EndpointDNAT
// (established packets follow conntrack), so:
//   - a bucket that DNATs counts the connections it sent to its endpoint;
//   - with ClientIP affinity the buckets only choose, and the endpoint's
//     DNAT flow counts every connection to it (engine.CountedFlow);
//   - a ServiceLB flow without actions counts the packets it dropped.
//
// Rejects are the reject packet-ins, by the frontend flow that sent them.
// A group or flow OVS replaced (its list changed) starts again from zero
// (docs/explain.md). What is read is mapped a part at a time, the lock
// released between parts: a group whose bucket count changed meanwhile is
// skipped; one changed to as many buckets reads from zero (OVS reset it).
func (d *Driver) Counters(ctx context.Context) (map[graph.ServicePortName]dataplanes.ServicePortCounts, error) {
	counting := d.counting()
	d.mu.Lock()
	rejects := map[graph.ServicePortName]uint64{}
	for cookie, n := range d.rejects.snapshot() {
		if sp, ok := d.model.ServicePortOf(cookie); ok {
			rejects[sp] += n
		}
	}
	d.mu.Unlock()
	groups, counted := counting.Groups, counting.Flows
	stats, err := d.conn.DumpGroupStats(ctx, len(groups))
	if err != nil {
		return nil, err
	}
	var flows []ofconn.FlowStats
	for _, table := range []pipeline.Table{pipeline.ServiceLB, pipeline.EndpointDNAT} {
		fs, err := d.conn.DumpFlowStats(ctx, table.ID, of.CookieTag, of.CookieTagMask, len(counted))
		if err != nil {
			return nil, err
		}
		flows = append(flows, fs...)
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
	for _, f := range flows {
		cf, ok := counted[f.Cookie]
		if !ok {
			continue
		}
		c := count(cf.ServicePort)
		if cf.Endpoint.IsValid() {
			c.Endpoints[cf.Endpoint] += f.Packets
			c.Connections += f.Packets
		} else {
			c.Dropped += f.Packets
		}
		out[cf.ServicePort] = c
	}
	for sp, n := range rejects {
		c := count(sp)
		c.Rejected = n
		out[sp] = c
	}
	return out, nil
}

// counting is the model's engine.Counting of every service port, read
// countingChunk ports per hold of the driver's lock.
func (d *Driver) counting() engine.Counting {
	d.mu.Lock()
	names := d.model.ServicePortNames()
	d.mu.Unlock()
	out := engine.Counting{Groups: map[uint32]engine.GroupBuckets{}, Flows: map[uint64]engine.CountedFlow{}}
	for part := range slices.Chunk(names, countingChunk) {
		d.mu.Lock()
		c := d.model.CountingOf(part)
		d.mu.Unlock()
		maps.Copy(out.Groups, c.Groups)
		maps.Copy(out.Flows, c.Flows)
	}
	return out
}
