package pipeline

import (
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/graph"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// flow is a small constructor: table, priority, match, actions, and the
// table to continue in (-1 for none).
func flow(t Table, prio uint16, match []of.Match, actions []of.Action, next *Table) *of.Flow {
	f := &of.Flow{Table: t.ID, Priority: prio, Match: match, Actions: actions, Goto: -1}
	if next != nil {
		f.Goto = int(next.ID)
	}
	return f
}

func m(ms ...of.Match) []of.Match   { return ms }
func a(as ...of.Action) []of.Action { return as }

// StaticFlows are the flows that depend only on the configuration.
func StaticFlows(c *Config) []*of.Flow {
	var fs []*of.Flow
	add := func(f ...*of.Flow) { fs = append(fs, f...) }

	// Classifier: the node's own port; pods and the uplink get theirs in
	// PodFlows and UplinkFlows. Unknown ports are dropped.
	add(flow(Classifier, 200, m(of.InPort(PortLocal)), a(loadSource(srcNode)), &Neighbor),
		flow(Classifier, 0, nil, nil, nil))

	// Neighbor: ARP for our virtual addresses answered in place; IPv6
	// neighbour solicitations for them go to the controller.
	for _, ip := range append(append([]netip.Addr{}, c.GatewayIPs...), c.NodeIPs...) {
		if ip.Is4() {
			add(flow(Neighbor, 200, m(of.EthType(of.EthARP), of.ArpOp(1), of.ArpTpa(ip)), a(
				of.Move{Src: "NXM_OF_ETH_SRC", Dst: "NXM_OF_ETH_DST", Bits: 48}, of.SetEthSrc(c.GatewayMAC),
				of.SetArpOp(2),
				of.Move{Src: "NXM_NX_ARP_SHA", Dst: "NXM_NX_ARP_THA", Bits: 48}, of.SetArpSha(c.GatewayMAC),
				of.Move{Src: "NXM_OF_ARP_SPA", Dst: "NXM_OF_ARP_TPA", Bits: 32}, of.SetArpSpa(ip),
				of.PortInPort), nil))
		} else {
			add(flow(Neighbor, 200, m(of.EthType(of.EthIPv6), of.IPProto(of.ProtoICMPv6), of.ICMPv6Type(135), of.NDTarget(ip)),
				a(of.Controller{ID: c.ControllerID, UserData: []byte{PacketInNeighbor}}), nil))
		}
	}
	// Other neighbour discovery (types 133..137) and other non-IP is dropped.
	for t := uint8(133); t <= 137; t++ {
		add(flow(Neighbor, 150, m(of.EthType(of.EthIPv6), of.IPProto(of.ProtoICMPv6), of.ICMPv6Type(t)), nil, nil))
	}
	add(flow(Neighbor, 100, m(of.EthType(of.EthIPv4)), nil, &UnSNAT),
		flow(Neighbor, 100, m(of.EthType(of.EthIPv6)), nil, &UnSNAT),
		flow(Neighbor, 0, nil, nil, nil))

	// UnSNAT: replies to our SNAT addresses go through the SNAT zone first.
	for _, ip := range append(append([]netip.Addr{}, c.HairpinIPs...), c.NodeIPs...) {
		add(flow(UnSNAT, 200, m(of.EthType(ethType(graph.FamilyOf(ip))), of.IPDst(host(ip))),
			a(of.CT{Zone: c.snatZone(), Table: int(ConntrackZone.ID), NAT: &of.NAT{}}), nil))
	}
	add(flow(UnSNAT, 0, nil, nil, &ConntrackZone))

	// ConntrackZone: every IP packet through the DNAT zone with nat.
	for _, et := range []of.EthType{of.EthIPv4, of.EthIPv6} {
		add(flow(ConntrackZone, 200, m(et), a(of.CT{Zone: c.CtZone, Table: int(ConntrackState.ID), NAT: &of.NAT{}}), nil))
	}
	add(flow(ConntrackZone, 0, nil, nil, nil))

	// ConntrackState.
	add(flow(ConntrackState, 200, m(of.CtState{Set: of.CtInv | of.CtTrk}), nil, nil))
	for _, et := range []of.EthType{of.EthIPv4, of.EthIPv6} {
		// Established service traffic in the original direction: apply SNAT
		// if the connection has it (a no-op otherwise).
		add(flow(ConntrackState, 190, m(et, of.CtState{Set: of.CtTrk, Unset: of.CtNew | of.CtRpl}, of.CtMark{Value: markService, Mask: markService}),
			a(of.CT{Zone: c.snatZone(), Table: int(L3Forwarding.ID), NAT: &of.NAT{}}), nil))
	}
	add(flow(ConntrackState, 180, m(of.CtState{Set: of.CtTrk, Unset: of.CtNew}), nil, &L3Forwarding),
		// New connections: affinity and service selection as subroutines.
		flow(ConntrackState, 0, nil, a(of.Resubmit(SessionAffinity.ID), of.Resubmit(ServiceLB.ID)), nil))

	// SessionAffinity default: the packet still needs an endpoint.
	add(flow(SessionAffinity, 0, nil, a(loadState(stateToSelect)), nil))

	// ServiceLB misses: an endpoint chosen by affinity goes to DNAT;
	// anything else is not a service.
	add(flow(ServiceLB, 10, m(matchState(stateSelected)), nil, &EndpointDNAT),
		flow(ServiceLB, 0, nil, nil, &ConntrackCommit))

	// EndpointDNAT: an endpoint learned for affinity that is gone is chosen
	// again from the current group.
	add(flow(EndpointDNAT, 190, m(matchState(stateSelected)), a(loadState(stateToSelect), of.Resubmit(ServiceLB.ID)), nil),
		flow(EndpointDNAT, 0, nil, nil, nil))

	// ServiceSNAT: masquerade to the node IP of the packet's family.
	for _, ip := range c.NodeIPs {
		add(flow(ServiceSNAT, 200, m(of.EthType(ethType(graph.FamilyOf(ip))), of.CtState{Set: of.CtNew | of.CtTrk},
			of.Reg{Index: regFlags, Value: flagMasquerade, Mask: flagMasquerade}),
			a(of.CT{Commit: true, Zone: c.snatZone(), Table: int(L3Forwarding.ID), NAT: &of.NAT{Kind: "src", IP: ip}}), nil))
	}
	add(flow(ServiceSNAT, 0, nil, nil, &L3Forwarding))

	// ConntrackCommit: commit new non-service connections.
	for _, et := range []of.EthType{of.EthIPv4, of.EthIPv6} {
		add(flow(ConntrackCommit, 200, m(et, of.CtState{Set: of.CtNew | of.CtTrk}),
			a(of.CT{Commit: true, Zone: c.CtZone, Table: -1}), &L3Forwarding))
	}
	add(flow(ConntrackCommit, 0, nil, nil, &L3Forwarding))

	// L3Forwarding default: out the uplink to its next hop (back out the
	// same port when the packet came in on it), else drop.
	if c.UplinkPort != 0 && c.UplinkNextHopMAC != nil {
		rewrite := []of.Action{of.SetEthSrc(c.GatewayMAC), of.SetEthDst(c.UplinkNextHopMAC)}
		add(flow(L3Forwarding, 10, m(of.InPort(c.UplinkPort)), append(append([]of.Action{}, rewrite...), of.PortInPort), nil),
			flow(L3Forwarding, 5, nil, append(append([]of.Action{}, rewrite...), of.Output(c.UplinkPort)), nil))
	} else {
		add(flow(L3Forwarding, 0, nil, nil, nil))
	}
	return fs
}

// UplinkFlows classify the uplink port.
func UplinkFlows(c *Config) []*of.Flow {
	if c.UplinkPort == 0 {
		return nil
	}
	return []*of.Flow{flow(Classifier, 200, m(of.InPort(c.UplinkPort)), a(loadSource(srcUplink)), &Neighbor)}
}

// PodFlows classify a pod's port, deliver to it, and hairpin it.
func PodFlows(c *Config, p Pod) []*of.Flow {
	fs := []*of.Flow{flow(Classifier, 200, m(of.InPort(p.Port)), a(loadSource(srcPod)), &Neighbor)}
	for _, ip := range p.IPs {
		et := ethType(graph.FamilyOf(ip))
		deliver := []of.Action{of.SetEthSrc(c.GatewayMAC), of.SetEthDst(p.MAC)}
		fs = append(fs,
			// The pod reaching itself (through its Service) goes back out
			// its own port.
			flow(L3Forwarding, 210, m(of.InPort(p.Port), et, of.IPDst(host(ip))), append(append([]of.Action{}, deliver...), of.PortInPort), nil),
			flow(L3Forwarding, 200, m(et, of.IPDst(host(ip))), append(append([]of.Action{}, deliver...), of.Output(p.Port)), nil))
		if hip, ok := graph.FirstOfFamily(c.HairpinIPs, graph.FamilyOf(ip)); ok {
			// Hairpin: DNATed to itself; SNAT to the hairpin IP so the
			// reply comes back through the bridge.
			fs = append(fs, flow(ServiceSNAT, 210, m(et, of.CtState{Set: of.CtNew | of.CtTrk}, of.IPSrc(host(ip)), of.IPDst(host(ip))),
				a(of.CT{Commit: true, Zone: c.snatZone(), Table: int(L3Forwarding.ID), NAT: &of.NAT{Kind: "src", IP: hip}}), nil))
		}
	}
	return fs
}
