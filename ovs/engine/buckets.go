package engine

import (
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
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
