package pipeline

import (
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// A UDP datagram over the MTU travels as IP fragments, and only the first
// carries the UDP header. With the kernel datapath, conntrack reassembles
// the datagram and the pipeline sees it whole. OVS's userspace conntrack
// (lib/ipf.c) reassembles it only inside each ct action: the fragments
// go on through the tables one by one, carrying the result's conntrack
// state, mark, label and original tuple, and only the first fragment gets
// the result's NAT. So, with either datapath:
//   - UDP frontends match the connection's original destination address
//     and the port ConntrackState copied from it (frontendMatch); a later
//     fragment, whose port reads 0, takes the port of its frontend IP
//     when that IP has only one UDP service port (LaterFragmentFlows), so
//     all fragments reach the same bucket and its ct action;
//   - a service connection's label keeps its endpoint's address (dnat);
//   - the later fragments' addresses are rewritten here: to the endpoint
//     after the DNAT of a new or established connection, from the
//     frontend (the original destination) on its replies, before they
//     meet another ct action, which would hold the first fragment back
//     for fragments of other addresses.
//
// A ct action emits all the fragments with the registers of the fragment
// that completed the datagram, whichever path it took: so every path into
// one ct action sets the registers alike (the first fragment's and the
// later ones' frontend port, the fragmentRewritten mark).
//
// Not covered: new datagrams to a frontend IP with several UDP ports (a
// later fragment cannot tell which) or to a NodePort (node addresses
// carry every NodePort); connections that are also SNATed (hairpin,
// masquerade, the node's own to the host), whose later fragments keep the
// address the SNAT replaced (docs/ovs.md, "Fragments").

// fragmentFlows are the rewrites of later fragments.
func fragmentFlows(c *Config) []*of.Flow {
	var fs []*of.Flow
	svc := serviceConn.match()
	later := of.NwFragLater{}
	for _, fam := range []graph.IPFamily{graph.IPv4, graph.IPv6} {
		et := of.EthType(ethType(fam))
		toEndpoint, fromFrontend := laterFragmentMoves(fam)
		fs = append(fs,
			// Original direction, established: to the endpoint, then as
			// priorityServiceOriginal.
			flow(ConntrackState, priorityServiceOriginalLater, matches(et, later, of.CtState{Set: of.CtTrk, Unset: of.CtRpl}, svc),
				actions(toEndpoint, fragmentRewritten.set(), isService.set(), of.CT{Zone: c.snatZone(), Table: int(L3Forwarding.ID), NAT: &of.NAT{}}), nil),
			// Replies: from the frontend, then as priorityServiceReply.
			flow(ConntrackState, priorityServiceReplyLater, matches(et, later, of.CtState{Set: of.CtTrk | of.CtRpl, Unset: of.CtNew}, svc),
				actions(fromFrontend, fragmentRewritten.set(), isService.set()), &L3Forwarding),
			// Just DNATed (a bucket's or EndpointDNAT's commit): to the
			// endpoint, once.
			flow(L3Forwarding, priorityLaterFragment, matches(et, later, isService.match(), fragmentAsIs.match()),
				actions(toEndpoint, fragmentRewritten.set(), of.Resubmit(L3Forwarding.ID)), nil))
	}
	return fs
}

// laterFragmentMoves are the moves that rewrite a later fragment's
// destination to the endpoint its connection's label keeps, and its
// source to its connection's original destination.
func laterFragmentMoves(fam graph.IPFamily) (toEndpoint, fromFrontend of.Move) {
	if fam == graph.IPv6 {
		return of.Move{Src: "NXM_NX_CT_LABEL", Dst: "NXM_NX_IPV6_DST", Bits: 128},
			of.Move{Src: "NXM_NX_CT_IPV6_DST", Dst: "NXM_NX_IPV6_SRC", Bits: 128}
	}
	return of.Move{Src: "NXM_NX_CT_LABEL", Dst: "NXM_OF_IP_DST", Bits: 32},
		of.Move{Src: "NXM_NX_CT_NW_DST", Dst: "NXM_OF_IP_SRC", Bits: 32}
}

// LaterFragmentFlows give the later fragments of new UDP datagrams to ip,
// a frontend IP with one UDP service port, that port.
func LaterFragmentFlows(ip netip.Addr, port uint16) []*of.Flow {
	fam := graph.FamilyOf(ip)
	return []*of.Flow{flow(SessionAffinity, priorityLaterFragmentPort,
		matches(of.EthType(ethType(fam)), of.NwFragLater{}, of.CtState{Set: of.CtTrk, Unset: of.CtInv}, of.CtOrigDst{Proto: of.ProtoUDP, IP: ip}),
		actions(frontendPortField.load(uint32(port)), toSelect.set()), nil)}
}
