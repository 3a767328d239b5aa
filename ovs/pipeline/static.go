package pipeline

import (
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// flow is a small constructor: table, priority, match, actions, and the
// table to continue in (nil for none).
func flow(t Table, prio uint16, match []of.Match, actions []of.Action, next *Table) *of.Flow {
	f := &of.Flow{Table: t.ID, Priority: prio, Match: match, Actions: actions, Goto: -1}
	if next != nil {
		f.Goto = int(next.ID)
	}
	return f
}

func m(ms ...of.Match) []of.Match   { return ms }
func a(as ...of.Action) []of.Action { return as }

var ipTypes = []of.EthType{of.EthIPv4, of.EthIPv6}

// StaticFlows are the flows that depend only on the configuration (the
// node, the gateway and tunnel ports), not on pods, peers or services.
func StaticFlows(c *Config) []*of.Flow {
	var fs []*of.Flow
	add := func(f ...*of.Flow) { fs = append(fs, f...) }

	// Classifier: pods get theirs in PodFlows; unknown ports are dropped.
	add(flow(Classifier, 0, nil, nil, nil))
	if c.GatewayPort != 0 {
		// The node's own traffic has one of its addresses as its source;
		// anything else the host forwards is external.
		for _, ip := range append(append([]netip.Addr{}, c.NodeIPs...), c.GatewayIPs()...) {
			add(flow(Classifier, 210, m(of.InPort(c.GatewayPort), of.EthType(ethType(graph.FamilyOf(ip))), of.IPSrc(host(ip))),
				a(loadSource(srcNode)), &Neighbor))
		}
		add(flow(Classifier, 200, m(of.InPort(c.GatewayPort)), a(loadSource(srcExternal)), &Neighbor))
	}
	if c.TunnelPort != 0 {
		// Other nodes send only routed IP through the tunnel.
		for _, et := range ipTypes {
			add(flow(Classifier, 200, m(of.InPort(c.TunnelPort), of.EthType(et)), a(loadSource(srcTunnel)), &UnSNAT))
		}
	}

	// Neighbor: every ARP request is answered with the router MAC (the
	// requester's own address is left alone in PodFlows), in place: the
	// target and sender addresses are swapped through a scratch register.
	add(flow(Neighbor, 220, m(of.EthType(of.EthARP), of.ArpSpa(netip.IPv4Unspecified())), nil, nil), // probes (RFC 5227)
		flow(Neighbor, 200, m(of.EthType(of.EthARP), of.ArpOp(1)), a(
			of.Move{Src: "NXM_OF_ETH_SRC", Dst: "NXM_OF_ETH_DST", Bits: 48}, of.SetEthSrc(c.RouterMAC),
			of.SetArpOp(2),
			of.Move{Src: "NXM_NX_ARP_SHA", Dst: "NXM_NX_ARP_THA", Bits: 48}, of.SetArpSha(c.RouterMAC),
			of.Move{Src: "NXM_OF_ARP_TPA", Dst: regField(regScratch), Bits: 32},
			of.Move{Src: "NXM_OF_ARP_SPA", Dst: "NXM_OF_ARP_TPA", Bits: 32},
			of.Move{Src: regField(regScratch), Dst: "NXM_OF_ARP_SPA", Bits: 32},
			of.PortInPort), nil),
		// IPv6 neighbour solicitations: the controller answers.
		flow(Neighbor, 200, m(of.EthType(of.EthIPv6), of.IPProto(of.ProtoICMPv6), of.ICMPv6Type(135)),
			a(of.Controller{ID: c.ControllerID, UserData: []byte{PacketInNeighbor}}), nil))
	// Other neighbour discovery (types 133..137), multicast and broadcast
	// are dropped: the bridge is a router.
	for t := uint8(133); t <= 137; t++ {
		add(flow(Neighbor, 150, m(of.EthType(of.EthIPv6), of.IPProto(of.ProtoICMPv6), of.ICMPv6Type(t)), nil, nil))
	}
	add(flow(Neighbor, 150, m(of.EthType(of.EthIPv6), of.IPDst(netip.MustParsePrefix("ff00::/8"))), nil, nil),
		flow(Neighbor, 150, m(of.EthType(of.EthIPv4), of.IPDst(netip.MustParsePrefix("224.0.0.0/4"))), nil, nil),
		flow(Neighbor, 150, m(of.EthType(of.EthIPv4), of.IPDst(netip.MustParsePrefix("255.255.255.255/32"))), nil, nil))
	for _, et := range ipTypes {
		add(flow(Neighbor, 100, m(of.EthType(et)), nil, &UnSNAT))
	}
	add(flow(Neighbor, 0, nil, nil, nil))

	// UnSNAT: replies to the addresses the bridge SNATs to go through the
	// SNAT zone first.
	for _, ip := range append(c.GatewayIPs(), c.VirtualIPs...) {
		add(flow(UnSNAT, 200, m(of.EthType(ethType(graph.FamilyOf(ip))), of.IPDst(host(ip))),
			a(of.CT{Zone: c.snatZone(), Table: int(ConntrackZone.ID), NAT: &of.NAT{}}), nil))
	}
	add(flow(UnSNAT, 0, nil, nil, &ConntrackZone))

	// ConntrackZone: every IP packet through the DNAT zone with nat.
	for _, et := range ipTypes {
		add(flow(ConntrackZone, 200, m(et), a(of.CT{Zone: c.CtZone, Table: int(ConntrackState.ID), NAT: &of.NAT{}}), nil))
	}
	add(flow(ConntrackZone, 0, nil, nil, nil))

	// ConntrackState.
	svc := of.CtMark{Value: markService, Mask: markService}
	add(flow(ConntrackState, 200, m(of.CtState{Set: of.CtInv | of.CtTrk}), nil, nil))
	for _, et := range ipTypes {
		// Service traffic in the original direction of a connection already
		// committed: apply the SNAT if the connection has one (a no-op
		// otherwise). That includes "new" packets with the service mark: a
		// retransmitted SYN whose first copy was lost after the commit
		// (conntrack calls a connection new until it sees a reply) arrives
		// here already DNATed, so it would match no frontend and leave
		// without its SNAT.
		add(flow(ConntrackState, 190, m(et, of.CtState{Set: of.CtTrk, Unset: of.CtRpl}, svc),
			a(setFlag(serviceBit), of.CT{Zone: c.snatZone(), Table: int(L3Forwarding.ID), NAT: &of.NAT{}}), nil))
	}
	add(flow(ConntrackState, 185, m(of.CtState{Set: of.CtTrk | of.CtRpl, Unset: of.CtNew}, svc), a(setFlag(serviceBit)), &L3Forwarding),
		flow(ConntrackState, 180, m(of.CtState{Set: of.CtTrk, Unset: of.CtNew}), nil, &L3Forwarding),
		// New connections: affinity and service selection as subroutines.
		flow(ConntrackState, 0, nil, a(setFlag(newConnBit), of.Resubmit(SessionAffinity.ID), of.Resubmit(ServiceLB.ID)), nil))

	// SessionAffinity default: the packet still needs an endpoint.
	add(flow(SessionAffinity, 0, nil, a(loadState(stateToSelect)), nil))

	// ServiceLB misses: an endpoint chosen by affinity goes to DNAT;
	// anything else is not a service.
	add(flow(ServiceLB, 10, m(matchState(stateSelected)), nil, &EndpointDNAT),
		flow(ServiceLB, 0, nil, nil, &L3Forwarding))

	// EndpointDNAT: an endpoint learned for affinity that is gone is chosen
	// again from the current group.
	add(flow(EndpointDNAT, 190, m(matchState(stateSelected)), a(loadState(stateToSelect), of.Resubmit(ServiceLB.ID)), nil),
		flow(EndpointDNAT, 0, nil, nil, nil))

	// L3Forwarding: local pods in PodFlows, other nodes' pods in PeerFlows.
	// A gateway IP is the host's; an address of this node's pod CIDRs
	// that no pod holds is dropped (the host routes the CIDR here, so it
	// would loop); everything else goes to the host.
	for _, p := range c.PodCIDRs {
		et := ethType(graph.FamilyOf(p.Addr()))
		add(flow(L3Forwarding, 180, m(of.EthType(et), of.IPDst(p.Masked())), nil, nil))
		if c.GatewayPort != 0 && c.GatewayMAC != nil {
			add(flow(L3Forwarding, 185, m(of.EthType(et), of.IPDst(host(GatewayOf(p)))), toGateway(c), &ServiceSNAT))
		}
	}
	if c.GatewayPort != 0 && c.GatewayMAC != nil {
		add(flow(L3Forwarding, 10, nil, toGateway(c), &ServiceSNAT))
	}
	add(flow(L3Forwarding, 0, nil, nil, nil))

	// ServiceSNAT: new connections only. Masqueraded ones leave with the
	// gateway IP, or with the virtual IP when they go to the host (which
	// would take its own address as a spoofed source); the node's own
	// service connections going back to the host are SNATed to the virtual
	// IP for the same reason.
	newConn := matchFlag(newConnBit, true)
	for _, fam := range []graph.IPFamily{graph.IPv4, graph.IPv6} {
		et := of.EthType(ethType(fam))
		if vip, ok := graph.FirstOfFamily(c.VirtualIPs, fam); ok {
			add(flow(ServiceSNAT, 200, m(et, newConn, matchFlag(flagMasquerade, true), matchDest(destGateway)), snat(c, vip), nil),
				flow(ServiceSNAT, 180, m(et, newConn, matchSource(srcNode), matchDest(destGateway), matchFlag(serviceBit, true)), snat(c, vip), nil))
		}
		if gw, ok := graph.FirstOfFamily(c.GatewayIPs(), fam); ok {
			add(flow(ServiceSNAT, 190, m(et, newConn, matchFlag(flagMasquerade, true)), snat(c, gw), nil))
		}
	}
	add(flow(ServiceSNAT, 0, nil, nil, &ConntrackCommit))

	// ConntrackCommit: commit new connections that are not services.
	for _, et := range ipTypes {
		add(flow(ConntrackCommit, 200, m(et, newConn, matchFlag(serviceBit, false)),
			a(of.CT{Commit: true, Zone: c.CtZone, Table: -1}), &Output))
	}
	add(flow(ConntrackCommit, 0, nil, nil, &Output))

	// Output: to the chosen port. Traffic from the host back to the host
	// that is not a service connection would loop: dropped.
	if c.GatewayPort != 0 {
		add(flow(Output, 210, m(of.InPort(c.GatewayPort), matchOutPort(c.GatewayPort), matchFlag(serviceBit, false)), nil, nil),
			flow(Output, 200, m(of.InPort(c.GatewayPort), matchOutPort(c.GatewayPort)), a(of.PortInPort), nil))
	}
	add(flow(Output, 0, nil, a(of.OutputReg(regOutPort)), nil))
	return fs
}

// toGateway sends a packet to the host.
func toGateway(c *Config) []of.Action {
	return a(of.SetEthSrc(c.RouterMAC), of.SetEthDst(c.GatewayMAC), setOutPort(c.GatewayPort), setDest(destGateway))
}

// snat commits a new service connection with a source NAT in the SNAT
// zone, marked as a service there too, then outputs it.
func snat(c *Config, to netip.Addr) []of.Action {
	return a(of.CT{Commit: true, Zone: c.snatZone(), Table: int(Output.ID), NAT: &of.NAT{Kind: "src", IP: to},
		SetMark: markService, MarkMask: markService})
}

func regField(i int) string { return "NXM_NX_REG" + string(rune('0'+i)) }

// PodFlows classify a pod's port, keep its neighbour requests for itself
// unanswered, deliver to it, and hairpin it.
func PodFlows(c *Config, p Pod) []*of.Flow {
	fs := []*of.Flow{
		flow(Classifier, 200, m(of.InPort(p.Port)), a(loadSource(srcPod)), &Neighbor),
		flow(Output, 200, m(of.InPort(p.Port), matchOutPort(p.Port)), a(of.PortInPort), nil),
	}
	for _, ip := range p.IPs {
		fam := graph.FamilyOf(ip)
		et := ethType(fam)
		if ip.Is4() {
			fs = append(fs, flow(Neighbor, 210, m(of.InPort(p.Port), of.EthType(of.EthARP), of.ArpTpa(ip)), nil, nil))
		}
		fs = append(fs, flow(L3Forwarding, 200, m(of.EthType(et), of.IPDst(host(ip))),
			a(of.SetEthSrc(c.RouterMAC), of.SetEthDst(p.MAC), setOutPort(p.Port), setDest(destPod)), &ServiceSNAT))
		if gw, ok := graph.FirstOfFamily(c.GatewayIPs(), fam); ok {
			// Hairpin: DNATed to itself; SNAT to the gateway IP so the
			// reply comes back through the bridge.
			fs = append(fs, flow(ServiceSNAT, 210, m(of.EthType(et), matchFlag(newConnBit, true), of.IPSrc(host(ip)), of.IPDst(host(ip))),
				snat(c, gw), nil))
		}
	}
	return fs
}

// PeerFlows route another node's pod CIDRs through the tunnel (overlay
// mode only: in routed mode the host carries them).
func PeerFlows(c *Config, p Peer) []*of.Flow {
	if c.TunnelPort == 0 || !p.IP.IsValid() {
		return nil
	}
	var fs []*of.Flow
	for _, cidr := range p.PodCIDRs {
		fs = append(fs, flow(L3Forwarding, 190, m(of.EthType(ethType(graph.FamilyOf(cidr.Addr()))), of.IPDst(cidr.Masked())),
			a(of.SetEthSrc(c.RouterMAC), of.SetEthDst(c.RouterMAC), of.SetTunDst(p.IP), setOutPort(c.TunnelPort), setDest(destTunnel)), &ServiceSNAT))
	}
	return fs
}
