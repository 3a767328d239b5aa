// Package pipeline is the OVS driver's pipeline, declared as data (the
// tables below, in order, with their purpose; the register layout in
// regs.go), and the pure functions that turn the graph, the node, its
// peers and the pods on the bridge into the flows and groups that
// implement it.
//
// The bridge is the router between the node's pods, the host (the gateway
// port) and, in overlay mode, the other nodes (the tunnel port). A
// packet's way through the tables:
//
//	Classifier ─► Neighbor ─► UnSNAT ─► ConntrackZone ─► ConntrackState
//	                                                        │ new         │ established/reply
//	                     SessionAffinity ◄─(resubmit)───────┤             │ (SNAT re-applied)
//	                     ServiceLB ◄──────(resubmit)────────┘             │
//	                        │ group: pick an endpoint; its bucket does    │
//	                        │ ct(commit,nat(dst)) ──────────────┐         │
//	                        ▼ (ClientIP affinity: via a learn)  │         │
//	                     EndpointDNAT ─ ct(commit,nat(dst)) ─┐  │         │
//	   (no service) ───────────────────────────────────────► L3Forwarding ◄┘
//	                                                         │ output port, MACs, tunnel end
//	                                                         ▼
//	                                   ServiceSNAT ─► ConntrackCommit ─► Output
package pipeline

// Table is one stage of the pipeline.
type Table struct {
	ID      uint8
	Name    string
	Purpose string
}

// The tables, in packet order. IDs are fixed so `switchyard render`
// output and ovs-ofctl dumps read the same across versions.
var (
	Classifier = Table{0, "Classifier",
		"Sorts packets by ingress port into pod, external, node and tunnel sources (reg0[0..3]); traffic from the gateway port is the node's own when its source is a node or gateway IP. Unknown ports are dropped."}
	Neighbor = Table{1, "Neighbor",
		"Answers ARP requests in place and IPv6 neighbour solicitations through the controller, for any address, with the router MAC; drops other non-IP, neighbour discovery and multicast."}
	UnSNAT = Table{2, "UnSNAT",
		"Undoes the bridge's SNAT (to a gateway or virtual IP) on replies, in the SNAT conntrack zone, before the DNAT zone sees them."}
	ConntrackZone = Table{3, "ConntrackZone",
		"Sends IP traffic through the DNAT conntrack zone with nat, which applies (or reverses) a connection's DNAT."}
	ConntrackState = Table{4, "ConntrackState",
		"Drops invalid packets; packets of committed service connections (established, or a retransmitted SYN conntrack still calls new) have their SNAT re-applied and go to forwarding; new connections go to service selection."}
	SessionAffinity = Table{5, "SessionAffinity",
		"Holds the flows learned for ClientIP affinity (client, frontend -> endpoint); its default marks the packet as needing an endpoint."}
	ServiceLB = Table{6, "ServiceLB",
		"Matches frontends (ClusterIP, NodePort, ExternalIP, LoadBalancer IP, source ranges, traffic source) and picks an endpoint with a select group whose bucket commits the connection with DNAT to it, or rejects/drops when there is none."}
	EndpointDNAT = Table{7, "EndpointDNAT",
		"For ClientIP affinity: commits the connection with DNAT to the endpoint a learned flow chose (one flow per endpoint, shared by services); re-selects when a learned endpoint is gone."}
	L3Forwarding = Table{8, "L3Forwarding",
		"Routes by destination: a local pod, another node's pod CIDR through the tunnel (overlay), anything else to the host through the gateway port; a missing pod of this node is dropped."}
	ServiceSNAT = Table{9, "ServiceSNAT",
		"SNATs new service connections that need it: hairpin and masqueraded ones to the gateway IP, or to the virtual IP when they leave through the host (as must the node's own)."}
	ConntrackCommit = Table{10, "ConntrackCommit",
		"Commits new connections that are not services, so their replies are not invalid to conntrack."}
	Output = Table{11, "Output",
		"Sends the packet out of the port L3Forwarding chose (back out its ingress port for hairpin); drops non-service traffic from the host back to the host."}
)

// Tables lists the pipeline in order.
var Tables = []Table{Classifier, Neighbor, UnSNAT, ConntrackZone, ConntrackState, SessionAffinity,
	ServiceLB, EndpointDNAT, L3Forwarding, ServiceSNAT, ConntrackCommit, Output}
