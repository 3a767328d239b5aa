package pipeline

import (
	"hash/fnv"

	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// ClientIP session affinity: the flows that learn a client's endpoint.

// learnFlow records the chosen endpoint for the client and frontend, then
// continues to DNAT. Learned flows expire after timeoutSeconds without a
// new connection from the client (idle_timeout; each new connection that
// uses the learned flow refreshes it, as upstream's iptables "recent" and
// nftables affinity sets are refreshed).
func learnFlow(sp *graph.ServicePort, fe frontend, fam graph.IPFamily, proto of.IPProto, res *ServiceResult) *of.Flow {
	timeout := sp.SessionAffinity.TimeoutSeconds
	if timeout > MaxAffinityTimeout {
		timeout = MaxAffinityTimeout
		res.AffinityClamped = true
	}
	src, dst, addrBits, endpointIP := "NXM_OF_IP_SRC", "NXM_OF_IP_DST", uint16(32), endpointIPField.learnCopy()
	if fam == graph.IPv6 {
		src, dst, addrBits, endpointIP = "NXM_NX_IPV6_SRC", "NXM_NX_IPV6_DST", 128, endpointIP6Field.learnCopy()
	}
	l4 := map[of.IPProto]string{of.ProtoTCP: "NXM_OF_TCP_DST", of.ProtoUDP: "NXM_OF_UDP_DST", of.ProtoSCTP: "OXM_OF_SCTP_DST"}[proto]
	// UDP: the frontend as frontendMatch takes it (a fragment's own
	// ports read 0).
	dst16 := of.LearnSpec{Field: l4, Bits: 16, From: l4}
	dstFrom := dst
	if proto == of.ProtoUDP {
		dst16.From = frontendPortField.nxm()
		dstFrom = "NXM_NX_CT_NW_DST"
		if fam == graph.IPv6 {
			dstFrom = "NXM_NX_CT_IPV6_DST"
		}
	}
	learn := of.Learn{
		Table: SessionAffinity.ID, Priority: priorityLearned, IdleTimeout: uint16(timeout), DeleteLearned: true,
		Cookie: of.CookieTag | of.CookieKindLearn | learnCookie(sp.Name),
		Specs: []of.LearnSpec{
			// The learned flow matches the client and the frontend ...
			{Field: "NXM_OF_ETH_TYPE", TextName: "eth_type", Bits: 16, Value: uint64(ethType(fam))},
			{Field: "NXM_OF_IP_PROTO", TextName: "nw_proto", Bits: 8, Value: uint64(proto)},
			{Field: src, Bits: addrBits, From: src},
			{Field: dst, Bits: addrBits, From: dstFrom},
			dst16,
			// ... and loads the endpoint chosen, marked selected.
			endpointIP,
			endpointPortField.learnCopy(),
			selected.learnLoad(),
			// The masquerade decision made for the client's first
			// connection: without it, a later connection of an outside
			// client to a remote endpoint would leave unSNATed and its
			// replies would bypass this node (a client's source kind never
			// changes, so copying it is exact).
			masqueradeField.learnCopy(),
		},
	}
	return flow(ServiceLB, priorityLearnAffinity, frontendMatch(fe, fam, proto, toLearn), actions(learn, selected.set()), &EndpointDNAT)
}

// learnCookie gives a service port's learned flows a cookie of their own.
func learnCookie(n graph.ServicePortName) uint64 {
	h := fnv.New64a()
	h.Write([]byte(n.String()))
	return h.Sum64() & (1<<40 - 1)
}
