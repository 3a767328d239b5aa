package engine

import (
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
)

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

// ServicePortGroups lists every desired group of a service port with its
// buckets' endpoints, by group ID. It renders the buckets again (they are
// not kept: docs/scale.md), so it costs what a cold sync's rendering of
// the groups costs.
func (m *Model) ServicePortGroups() map[uint32]GroupBuckets {
	rendered := map[OwnerKey]Rendering{}
	out := map[uint32]GroupBuckets{}
	for name := range m.sps {
		_, groups := m.st.Owned(ServicePortOwner(name))
		for _, id := range groups {
			g := m.st.GroupOf(id, rendered)
			if g == nil {
				continue
			}
			gb := GroupBuckets{ServicePort: name, Endpoints: make([]netip.AddrPort, g.Buckets.Len())}
			for i := range gb.Endpoints {
				gb.Endpoints[i] = dnatOf(g.Buckets.Bucket(i))
			}
			out[id] = gb
		}
	}
	return out
}

// dnatOf is the endpoint a bucket's actions DNAT to (the zero value if
// none).
func dnatOf(actions []of.Action) netip.AddrPort {
	for _, a := range actions {
		if ct, ok := a.(of.CT); ok && ct.NAT != nil && ct.NAT.Kind == "dst" {
			return netip.AddrPortFrom(ct.NAT.IP, ct.NAT.Port)
		}
	}
	return netip.AddrPort{}
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

// ServicePortCountedFlows lists the counted flows by cookie. A DNAT flow
// two service ports share (same endpoint, port and protocol) is in
// neither: its packets cannot be told apart.
func (m *Model) ServicePortCountedFlows() map[uint64]CountedFlow {
	rendered := map[OwnerKey]Rendering{}
	out := map[uint64]CountedFlow{}
	for name := range m.sps {
		owner := ServicePortOwner(name)
		cookies, _ := m.st.Owned(owner)
		for _, c := range cookies {
			if e := m.st.flows[c]; e == nil || e.owner != owner {
				continue
			}
			f := m.st.FlowOf(c, rendered)
			switch {
			case f == nil:
			case f.Table == pipeline.ServiceLB.ID && len(f.Actions) == 0 && f.Goto < 0:
				out[c] = CountedFlow{ServicePort: name}
			case f.Table == pipeline.EndpointDNAT.ID:
				if ep := dnatOf(f.Actions); ep.IsValid() {
					out[c] = CountedFlow{ServicePort: name, Endpoint: ep}
				}
			}
		}
	}
	return out
}
