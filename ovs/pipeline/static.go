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

// matches and actions write a flow's match and action lists.
func matches(ms ...of.Match) []of.Match   { return ms }
func actions(as ...of.Action) []of.Action { return as }

var ipTypes = []of.EthType{of.EthIPv4, of.EthIPv6}

// StaticFlows are the flows that depend only on the configuration (the
// node, the gateway and tunnel ports), not on pods, peers or services.
func StaticFlows(c *Config) []*of.Flow {
	// One function per table, in the pipeline's order.
	var fs []*of.Flow
	for _, table := range []func(*Config) []*of.Flow{
		missFlows, classifierFlows, neighborFlows, unSNATFlows, conntrackZoneFlows, conntrackStateFlows, serviceLBFlows, endpointDNATFlows, l3ForwardingFlows, serviceSNATFlows, conntrackCommitFlows, outputFlows,
	} {
		fs = append(fs, table(c)...)
	}
	return fs
}

// missFlows are every table's miss flow.
func missFlows(c *Config) []*of.Flow {
	var fs []*of.Flow
	add := func(f ...*of.Flow) { fs = append(fs, f...) }
	for _, t := range Tables {
		add(t.missFlow())
	}
	return fs
}

// classifierFlows are Classifier's: pods get theirs in PodFlows; unknown
// ports are dropped.
func classifierFlows(c *Config) []*of.Flow {
	var fs []*of.Flow
	add := func(f ...*of.Flow) { fs = append(fs, f...) }
	if c.GatewayPort != 0 {
		// The node's own traffic has one of its addresses as its source;
		// anything else the host forwards is external.
		for _, ip := range append(append([]netip.Addr{}, c.NodeIPs...), c.GatewayIPs()...) {
			add(flow(Classifier, prioritySourceByAddress, matches(of.InPort(c.GatewayPort), of.EthType(ethType(graph.FamilyOf(ip))), of.IPSrc(host(ip))),
				actions(fromNode.set()), &Neighbor))
		}
		add(flow(Classifier, prioritySourceByPort, matches(of.InPort(c.GatewayPort)), actions(fromOutside.set()), &Neighbor))
	}
	if c.TunnelPort != 0 {
		// Other nodes send only routed IP through the tunnel.
		for _, et := range ipTypes {
			add(flow(Classifier, prioritySourceByPort, matches(of.InPort(c.TunnelPort), of.EthType(et)), actions(fromTunnel.set()), &UnSNAT))
		}
	}
	return fs
}

// neighborFlows are Neighbor's: every ARP request is answered with the router MAC (the
// requester's own address is left alone in PodFlows), in place: the
// target and sender addresses are swapped through a scratch register.
func neighborFlows(c *Config) []*of.Flow {
	var fs []*of.Flow
	add := func(f ...*of.Flow) { fs = append(fs, f...) }
	add(flow(Neighbor, priorityARPProbe, matches(of.EthType(of.EthARP), of.ArpSpa(netip.IPv4Unspecified())), nil, nil), // RFC 5227
		flow(Neighbor, priorityNeighborReply, matches(of.EthType(of.EthARP), of.ArpOp(1)), actions(
			of.Move{Src: "NXM_OF_ETH_SRC", Dst: "NXM_OF_ETH_DST", Bits: 48}, of.SetEthSrc(c.RouterMAC),
			of.SetArpOp(2),
			of.Move{Src: "NXM_NX_ARP_SHA", Dst: "NXM_NX_ARP_THA", Bits: 48}, of.SetArpSha(c.RouterMAC),
			of.Move{Src: "NXM_OF_ARP_TPA", Dst: scratchField.nxm(), Bits: scratchField.bits},
			of.Move{Src: "NXM_OF_ARP_SPA", Dst: "NXM_OF_ARP_TPA", Bits: 32},
			of.Move{Src: scratchField.nxm(), Dst: "NXM_OF_ARP_SPA", Bits: scratchField.bits},
			of.PortInPort), nil),
		// IPv6 neighbour solicitations: the controller answers.
		flow(Neighbor, priorityNeighborReply, matches(of.EthType(of.EthIPv6), of.IPProto(of.ProtoICMPv6), of.ICMPv6Type(135)),
			actions(of.Controller{ID: c.ControllerID, UserData: []byte{PacketInNeighbor}}), nil))
	// Other neighbour discovery (types 133..137), multicast and broadcast
	// are dropped: the bridge is a router.
	for t := uint8(133); t <= 137; t++ {
		add(flow(Neighbor, priorityNeighborDrop, matches(of.EthType(of.EthIPv6), of.IPProto(of.ProtoICMPv6), of.ICMPv6Type(t)), nil, nil))
	}
	add(flow(Neighbor, priorityNeighborDrop, matches(of.EthType(of.EthIPv6), of.IPDst(netip.MustParsePrefix("ff00::/8"))), nil, nil),
		flow(Neighbor, priorityNeighborDrop, matches(of.EthType(of.EthIPv4), of.IPDst(netip.MustParsePrefix("224.0.0.0/4"))), nil, nil),
		flow(Neighbor, priorityNeighborDrop, matches(of.EthType(of.EthIPv4), of.IPDst(netip.MustParsePrefix("255.255.255.255/32"))), nil, nil))
	for _, et := range ipTypes {
		add(flow(Neighbor, priorityIPOnward, matches(of.EthType(et)), nil, &UnSNAT))
	}
	return fs
}

// unSNATFlows are UnSNAT's: replies to the addresses the bridge SNATs to go through the
// SNAT zone first.
func unSNATFlows(c *Config) []*of.Flow {
	var fs []*of.Flow
	add := func(f ...*of.Flow) { fs = append(fs, f...) }
	for _, ip := range append(c.GatewayIPs(), c.VirtualIPs...) {
		add(flow(UnSNAT, priorityConntrack, matches(of.EthType(ethType(graph.FamilyOf(ip))), of.IPDst(host(ip))),
			actions(of.CT{Zone: c.snatZone(), Table: int(ConntrackZone.ID), NAT: &of.NAT{}}), nil))
	}
	return fs
}

// conntrackZoneFlows are ConntrackZone's: every IP packet through the DNAT zone with nat.
func conntrackZoneFlows(c *Config) []*of.Flow {
	var fs []*of.Flow
	add := func(f ...*of.Flow) { fs = append(fs, f...) }
	for _, et := range ipTypes {
		add(flow(ConntrackZone, priorityConntrack, matches(et), actions(of.CT{Zone: c.CtZone, Table: int(ConntrackState.ID), NAT: &of.NAT{}}), nil))
	}
	return fs
}

// conntrackStateFlows are ConntrackState's.
func conntrackStateFlows(c *Config) []*of.Flow {
	var fs []*of.Flow
	add := func(f ...*of.Flow) { fs = append(fs, f...) }
	svc := serviceConn.match()
	add(flow(ConntrackState, priorityInvalid, matches(of.CtState{Set: of.CtInv | of.CtTrk}), nil, nil))
	for _, et := range ipTypes {
		// Service traffic in the original direction of a connection already
		// committed: apply the SNAT if the connection has one (a no-op
		// otherwise). That includes "new" packets with the service mark: a
		// retransmitted SYN whose first copy was lost after the commit
		// (conntrack calls a connection new until it sees a reply) arrives
		// here already DNATed, so it would match no frontend and leave
		// without its SNAT.
		// (fragmentRewritten as its later fragments' flow sets it: see
		// fragmentFlows.)
		add(flow(ConntrackState, priorityServiceOriginal, matches(et, of.CtState{Set: of.CtTrk, Unset: of.CtRpl}, svc),
			actions(isService.set(), fragmentRewritten.set(), of.CT{Zone: c.snatZone(), Table: int(L3Forwarding.ID), NAT: &of.NAT{}}), nil))
	}
	add(flow(ConntrackState, priorityServiceReply, matches(of.CtState{Set: of.CtTrk | of.CtRpl, Unset: of.CtNew}, svc), actions(isService.set()), &L3Forwarding),
		flow(ConntrackState, priorityEstablished, matches(of.CtState{Set: of.CtTrk, Unset: of.CtNew}), nil, &L3Forwarding))
	add(fragmentFlows(c)...)
	// New connections: SessionAffinity, then ServiceLB, as subroutines
	// (tables.go), with their original destination port, which frontends
	// match (a later fragment's reads 0: fragments.go).
	add(flow(ConntrackState, priorityNewConnection, matches(of.CtState{Set: of.CtTrk, Unset: of.CtInv}),
		actions(newConn.set(), of.Move{Src: "NXM_NX_CT_TP_DST", Dst: frontendPortField.nxm(), Bits: frontendPortField.bits},
			of.Resubmit(SessionAffinity.ID), of.Resubmit(ServiceLB.ID)), nil))
	return fs
}

// serviceLBFlows are ServiceLB's static ones: an endpoint chosen by affinity goes to DNAT (anything
// else no frontend took is not a service: the miss).
func serviceLBFlows(c *Config) []*of.Flow {
	var fs []*of.Flow
	add := func(f ...*of.Flow) { fs = append(fs, f...) }
	add(flow(ServiceLB, priorityAffinityChosen, matches(selected.match()), nil, &EndpointDNAT))
	return fs
}

// endpointDNATFlows are EndpointDNAT's static ones: an endpoint learned for affinity that is gone is chosen
// again from the current group.
func endpointDNATFlows(c *Config) []*of.Flow {
	var fs []*of.Flow
	add := func(f ...*of.Flow) { fs = append(fs, f...) }
	add(flow(EndpointDNAT, priorityReselect, matches(selected.match()), actions(toSelect.set(), of.Resubmit(ServiceLB.ID)), nil))
	return fs
}

// l3ForwardingFlows are L3Forwarding's static ones: local pods in PodFlows, other nodes' pods in PeerFlows.
// A gateway IP is the host's; an address of this node's pod CIDRs
// that no pod holds is dropped (the host routes the CIDR here, so it
// would loop); everything else goes to the host.
func l3ForwardingFlows(c *Config) []*of.Flow {
	var fs []*of.Flow
	add := func(f ...*of.Flow) { fs = append(fs, f...) }
	for _, p := range c.PodCIDRs {
		et := ethType(graph.FamilyOf(p.Addr()))
		add(flow(L3Forwarding, priorityNoSuchPod, matches(of.EthType(et), of.IPDst(p.Masked())), nil, nil))
		if c.GatewayPort != 0 && c.GatewayMAC != nil {
			add(flow(L3Forwarding, priorityToGatewayIP, matches(of.EthType(et), of.IPDst(host(GatewayOf(p)))), toHost(c), &ServiceSNAT))
		}
	}
	if c.GatewayPort != 0 && c.GatewayMAC != nil {
		for _, et := range ipTypes { // dec_ttl takes IP flows only
			add(flow(L3Forwarding, priorityToHost, matches(et), toHost(c), &ServiceSNAT))
		}
	}
	return fs
}

// serviceSNATFlows are ServiceSNAT's: new connections only. Masqueraded ones leave with the
// gateway IP, or with the virtual IP when they go to the host (which
// would take its own address as a spoofed source); the node's own
// service connections going back to the host are SNATed to the virtual
// IP for the same reason.
func serviceSNATFlows(c *Config) []*of.Flow {
	var fs []*of.Flow
	add := func(f ...*of.Flow) { fs = append(fs, f...) }
	for _, fam := range []graph.IPFamily{graph.IPv4, graph.IPv6} {
		et := of.EthType(ethType(fam))
		if vip, ok := graph.FirstOfFamily(c.VirtualIPs, fam); ok {
			add(flow(ServiceSNAT, priorityMasqueradeToHost, matches(et, newConn.match(), masquerade.match(), toGateway.match()), snat(c, vip), nil),
				flow(ServiceSNAT, priorityNodeToHost, matches(et, newConn.match(), fromNode.match(), toGateway.match(), isService.match()), snat(c, vip), nil))
		}
		if gw, ok := graph.FirstOfFamily(c.GatewayIPs(), fam); ok {
			add(flow(ServiceSNAT, priorityMasquerade, matches(et, newConn.match(), masquerade.match()), snat(c, gw), nil))
		}
		// Overlay: the node's own service connections to another node's
		// endpoint keep their source, the node's address as a kernel's
		// masquerade would give it (upstream's ETP=Local short-circuit
		// preserves it); their replies come back through the tunnel
		// (PeerFlows), not around the bridge.
		if c.TunnelPort != 0 {
			add(flow(ServiceSNAT, priorityNodeThroughTunnel, matches(et, newConn.match(), fromNode.match(), toTunnel.match()), nil, &ConntrackCommit))
		}
	}
	return fs
}

// conntrackCommitFlows are ConntrackCommit's: commit new connections that are not services
// (with a null SNAT if c.CommitNullSNAT); those that came through the tunnel marked so, for
// their replies (PeerFlows).
func conntrackCommitFlows(c *Config) []*of.Flow {
	var fs []*of.Flow
	add := func(f ...*of.Flow) { fs = append(fs, f...) }
	var nat *of.NAT
	if c.CommitNullSNAT {
		nat = &of.NAT{Kind: "src"}
	}
	for _, et := range ipTypes {
		add(flow(ConntrackCommit, priorityConntrack, matches(et, newConn.match(), notService.match()),
			actions(of.CT{Commit: true, Zone: c.CtZone, Table: -1, NAT: nat}), &Output))
		if c.TunnelPort != 0 {
			add(flow(ConntrackCommit, priorityConntrackFromTunnel, matches(et, newConn.match(), notService.match(), fromTunnel.match()),
				actions(of.CT{Commit: true, Zone: c.CtZone, Table: -1, NAT: nat, SetMark: tunnelConn.value, MarkMask: tunnelConn.mask}), &Output))
		}
	}
	return fs
}

// outputFlows are Output's: to the chosen port. Traffic from the host back to the host
// that is not a service connection would loop: dropped.
func outputFlows(c *Config) []*of.Flow {
	var fs []*of.Flow
	add := func(f ...*of.Flow) { fs = append(fs, f...) }
	if c.GatewayPort != 0 {
		add(flow(Output, priorityHostLoop, matches(of.InPort(c.GatewayPort), outPortField.match(c.GatewayPort), notService.match()), nil, nil),
			flow(Output, priorityBackOut, matches(of.InPort(c.GatewayPort), outPortField.match(c.GatewayPort)), actions(of.PortInPort), nil))
	}
	return fs
}

// toHost routes a packet to the host, through the gateway port. Every
// route the bridge takes decrements the TTL (hop limit), as a router
// does, so a routing loop through it dies out.
func toHost(c *Config) []of.Action {
	return actions(of.DecTTL{}, of.SetEthSrc(c.RouterMAC), of.SetEthDst(c.GatewayMAC), outPortField.load(c.GatewayPort), toGateway.set())
}

// snat commits a new service connection with a source NAT in the SNAT
// zone, marked as a service there too, then outputs it.
func snat(c *Config, to netip.Addr) []of.Action {
	return actions(of.CT{Commit: true, Zone: c.snatZone(), Table: int(Output.ID), NAT: &of.NAT{Kind: "src", IP: to},
		SetMark: serviceConn.value, MarkMask: serviceConn.mask})
}

// PodFlows classify a pod's port, keep its neighbour requests for itself
// unanswered, deliver to it, and hairpin it.
func PodFlows(c *Config, p Pod) []*of.Flow {
	fs := []*of.Flow{
		flow(Classifier, prioritySourceByPort, matches(of.InPort(p.Port)), actions(fromPod.set()), &Neighbor),
		flow(Output, priorityBackOut, matches(of.InPort(p.Port), outPortField.match(p.Port)), actions(of.PortInPort), nil),
	}
	for _, ip := range p.IPs {
		fam := graph.FamilyOf(ip)
		et := ethType(fam)
		if ip.Is4() {
			fs = append(fs, flow(Neighbor, priorityOwnAddress, matches(of.InPort(p.Port), of.EthType(of.EthARP), of.ArpTpa(ip)), nil, nil))
		}
		fs = append(fs, flow(L3Forwarding, priorityToPod, matches(of.EthType(et), of.IPDst(host(ip))),
			actions(of.DecTTL{}, of.SetEthSrc(c.RouterMAC), of.SetEthDst(p.MAC), outPortField.load(p.Port), toPod.set()), &ServiceSNAT))
		if gw, ok := graph.FirstOfFamily(c.GatewayIPs(), fam); ok {
			// Hairpin: DNATed to itself; SNAT to the gateway IP so the
			// reply comes back through the bridge.
			fs = append(fs, flow(ServiceSNAT, priorityHairpin, matches(of.EthType(et), newConn.match(), of.IPSrc(host(ip)), of.IPDst(host(ip))),
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
	toPeer := actions(of.DecTTL{}, of.SetEthSrc(c.RouterMAC), of.SetEthDst(c.RouterMAC), of.SetTunDst(p.IP), outPortField.load(c.TunnelPort), toTunnel.set())
	for _, cidr := range p.PodCIDRs {
		fs = append(fs, flow(L3Forwarding, priorityToPeer, matches(of.EthType(ethType(graph.FamilyOf(cidr.Addr()))), of.IPDst(cidr.Masked())), toPeer, &ServiceSNAT))
	}
	// Replies of connections the peer sent through the tunnel from its own
	// address go back through it, to the peer's bridge, which holds their
	// NAT (ServiceSNAT's priorityNodeThroughTunnel).
	fs = append(fs, flow(L3Forwarding, priorityReplyToPeerNode,
		matches(of.EthType(ethType(graph.FamilyOf(p.IP))), of.CtState{Set: of.CtTrk | of.CtRpl}, tunnelConn.match(), of.IPDst(host(p.IP))), toPeer, &ServiceSNAT))
	return fs
}
