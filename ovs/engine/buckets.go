package engine

import (
	"maps"
	"net/netip"
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
)

// Counting says what OVS's statistics of some service ports count: their
// groups bucket by bucket, and their flows whose packet count is a
// counter.
type Counting struct {
	Groups map[uint32]GroupBuckets
	Flows  map[uint64]CountedFlow
}

// GroupBuckets is one group of a service port, bucket by bucket: what OVS
// counts per bucket (ofconn.GroupStats) maps to endpoints through it.
type GroupBuckets struct {
	ServicePort graph.ServicePortName
	// Endpoints holds, per bucket in the group's order, the endpoint the
	// bucket DNATs to; the zero value where it does not (a bucket sending
	// to a child group of a large list's tree, or ClientIP affinity's,
	// which DNATs in EndpointDNAT after a learn).
	Endpoints []netip.AddrPort
}

// CountedFlow is a service port's flow whose packet count is one of its
// counters: a drop (a ServiceLB flow without actions: no endpoint this
// traffic may use, or a source outside loadBalancerSourceRanges), or a
// ClientIP-affinity endpoint's DNAT (every new connection of the service
// port to that endpoint, first or learned, goes through it once).
type CountedFlow struct {
	ServicePort graph.ServicePortName
	// Endpoint is the DNAT flow's endpoint; the zero value for a drop.
	Endpoint netip.AddrPort
}

// ServicePortNames lists the model's service ports (to read their
// Counting a part at a time).
func (m *Model) ServicePortNames() []graph.ServicePortName {
	return slices.Collect(maps.Keys(m.sps))
}

// CountingOf is the Counting of the named service ports (those the model
// no longer has are skipped). Their flows and groups are rendered again
// (they are not kept: docs/scale.md), each port once, so it costs what a
// cold sync's rendering of those ports costs. A DNAT flow two service
// ports share (same endpoint, port and protocol) is in neither: its
// packets cannot be told apart.
func (m *Model) CountingOf(names []graph.ServicePortName) Counting {
	out := Counting{Groups: map[uint32]GroupBuckets{}, Flows: map[uint64]CountedFlow{}}
	for _, name := range names {
		if m.sps[name] == nil {
			continue
		}
		owner := ServicePortOwner(name)
		rendered := map[OwnerKey]Rendering{} // this port's, once
		cookies, groups := m.st.Owned(owner)
		for _, id := range groups {
			if g := m.st.GroupOf(id, rendered); g != nil {
				gb := GroupBuckets{ServicePort: name, Endpoints: make([]netip.AddrPort, g.Buckets.Len())}
				for i := range gb.Endpoints {
					gb.Endpoints[i] = dnatOf(g.Buckets.Bucket(i))
				}
				out.Groups[id] = gb
			}
		}
		for _, c := range cookies {
			if e := m.st.flows[c]; e == nil || e.owner != owner {
				continue
			}
			if cf, ok := countedFlow(name, m.st.FlowOf(c, rendered)); ok {
				out.Flows[c] = cf
			}
		}
	}
	return out
}

// countedFlow says whether f (of service port name) counts, and what.
func countedFlow(name graph.ServicePortName, f *of.Flow) (CountedFlow, bool) {
	switch {
	case f == nil:
	case f.Table == pipeline.ServiceLB.ID && len(f.Actions) == 0 && f.Goto < 0:
		return CountedFlow{ServicePort: name}, true
	case f.Table == pipeline.EndpointDNAT.ID:
		if ep := dnatOf(f.Actions); ep.IsValid() {
			return CountedFlow{ServicePort: name, Endpoint: ep}, true
		}
	}
	return CountedFlow{}, false
}

// dnatOf is the endpoint a bucket's or flow's actions DNAT to (the zero
// value if none).
func dnatOf(actions []of.Action) netip.AddrPort {
	for _, a := range actions {
		if ct, ok := a.(of.CT); ok && ct.NAT != nil && ct.NAT.Kind == "dst" {
			return netip.AddrPortFrom(ct.NAT.IP, ct.NAT.Port)
		}
	}
	return netip.AddrPort{}
}
