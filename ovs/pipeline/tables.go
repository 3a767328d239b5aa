// Package pipeline is the OVS driver's pipeline, declared as data (the
// tables below, in order, with their purpose; the register layout in
// regs.go), and the pure functions that turn the graph, the node and the
// pods on the bridge into the flows and groups that implement it.
//
// A packet's way through the tables:
//
//	Classifier ─► Neighbor ─► UnSNAT ─► ConntrackZone ─► ConntrackState
//	                                                        │ new         │ established/reply
//	                     SessionAffinity ◄─(resubmit)───────┤             ▼
//	                     ServiceLB ◄──────(resubmit)────────┘   (SNAT re-applied) ─► L3Forwarding
//	                        │ group: pick an endpoint into registers
//	                        ▼
//	                     EndpointDNAT ─ ct(commit,nat(dst)) ─► ServiceSNAT ─► L3Forwarding
//	   (no service) ─► ConntrackCommit ─────────────────────────────────────► L3Forwarding
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
		"Sorts packets by ingress port into pod, uplink and node (LOCAL) sources (reg0[0..3]); unknown ports are dropped."}
	Neighbor = Table{1, "Neighbor",
		"Answers ARP for the gateway and node IPs in place and IPv6 neighbour solicitations through the controller; passes IP on; drops other non-IP."}
	UnSNAT = Table{2, "UnSNAT",
		"Undoes Switchyard's SNAT (hairpin and masquerade) on replies, in the SNAT conntrack zone, before the DNAT zone sees them."}
	ConntrackZone = Table{3, "ConntrackZone",
		"Sends IP traffic through the DNAT conntrack zone with nat, which applies (or reverses) a connection's DNAT."}
	ConntrackState = Table{4, "ConntrackState",
		"Drops invalid packets; established service traffic has its SNAT re-applied and goes to forwarding; new connections go to service selection."}
	SessionAffinity = Table{5, "SessionAffinity",
		"Holds the flows learned for ClientIP affinity (client, frontend -> endpoint); its default marks the packet as needing an endpoint."}
	ServiceLB = Table{6, "ServiceLB",
		"Matches frontends (ClusterIP, NodePort, ExternalIP, LoadBalancer IP, source ranges, traffic source) and picks an endpoint with a select group, or rejects/drops when there is none."}
	EndpointDNAT = Table{7, "EndpointDNAT",
		"Commits the connection with DNAT to the chosen endpoint (one flow per endpoint, shared by services); re-selects when a learned endpoint is gone."}
	ServiceSNAT = Table{8, "ServiceSNAT",
		"SNATs hairpin connections to the hairpin IP and masqueraded ones (external traffic with externalTrafficPolicy=Cluster) to the node IP."}
	ConntrackCommit = Table{9, "ConntrackCommit",
		"Commits connections that are not services, so their replies are not invalid to conntrack."}
	L3Forwarding = Table{10, "L3Forwarding",
		"Routes by destination: local pods (MAC rewrite, or back out the ingress port for hairpin), everything else out the uplink to its next hop."}
)

// Tables lists the pipeline in order.
var Tables = []Table{Classifier, Neighbor, UnSNAT, ConntrackZone, ConntrackState, SessionAffinity,
	ServiceLB, EndpointDNAT, ServiceSNAT, ConntrackCommit, L3Forwarding}
