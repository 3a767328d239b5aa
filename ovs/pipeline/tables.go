// Package pipeline is the OVS driver's pipeline, declared as data (the
// tables below, in order, with their purpose and their miss flow; the
// registers' fields and marks in regs.go; flow priorities in
// priorities.go; docs/ovs.md's tables are made from these), and the pure
// functions that turn the graph, the node, its peers and the pods on the
// bridge into the flows and groups that implement it.
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

import of "github.com/switchyard-proxy/switchyard/ovs/openflow"

// Table is one stage of the pipeline.
type Table struct {
	ID      uint8
	Name    string
	Purpose string // what its flows do (docs/ovs.md's pipeline table is made of it)
	// Miss is what the table does with a packet none of its other flows
	// takes: StaticFlows makes its priority-0 flow from it.
	Miss Miss
}

// Miss is a table's default: actions, then a table to continue in. No
// actions and no next table drops the packet.
type Miss struct {
	Actions []of.Action
	Next    *Table
}

// missFlow is the table's priority-0 flow.
func (t Table) missFlow() *of.Flow { return flow(t, priorityMiss, nil, t.Miss.Actions, t.Miss.Next) }

// dropMiss drops what no other flow of the table takes.
var dropMiss = Miss{}

// The tables, in packet order. IDs are fixed so `switchyard render`
// output and ovs-ofctl dumps read the same across versions.
var (
	Classifier = Table{0, "Classifier",
		"packet source from the ingress port: pod, external (forwarded by the host), node (the host's own: from the gateway with a node or gateway IP as source), tunnel; unknown ports dropped",
		dropMiss}
	Neighbor = Table{1, "Neighbor",
		"every ARP request answered in place with the router MAC (not a pod's question about itself, not probes); IPv6 neighbour solicitations to the controller; other neighbour discovery, multicast and non-IP dropped",
		dropMiss}
	UnSNAT = Table{2, "UnSNAT",
		"replies to the gateway and virtual IPs go through the SNAT zone first",
		Miss{Next: &ConntrackZone}}
	ConntrackZone = Table{3, "ConntrackZone",
		"every IP packet through the DNAT zone with `nat`",
		dropMiss}
	ConntrackState = Table{4, "ConntrackState",
		"invalid dropped; original-direction packets of committed service connections (established, or a retransmitted SYN that conntrack still calls new) marked and their SNAT re-applied; new connections go to selection with their original destination port in a register; later fragments of service connections get the addresses the first one got (Fragments)",
		dropMiss} // every packet here has been through conntrack
	SessionAffinity = Table{5, "SessionAffinity",
		"learned affinity flows (client, frontend → endpoint); default: \"needs an endpoint\"",
		Miss{Actions: []of.Action{toSelect.set()}}}
	ServiceLB = Table{6, "ServiceLB",
		"frontends → select group, whose bucket commits the connection with `ct(commit, nat(dst=endpoint))`; no endpoints → reject (controller) or drop",
		Miss{Next: &L3Forwarding}}
	EndpointDNAT = Table{7, "EndpointDNAT",
		"for ClientIP affinity only: `ct(commit, nat(dst=endpoint))` for the endpoint a learned flow chose, one flow per endpoint shared by services; re-selects a learned endpoint that is gone",
		dropMiss}
	L3Forwarding = Table{8, "L3Forwarding",
		"output port and MACs by destination: a local pod, another node's pod CIDR through the tunnel, a missing pod of this node dropped, anything else (IP) to the host; each route decrements the TTL / hop limit (`dec_ttl`: a packet routed with TTL 1 dies here, as at any router)",
		dropMiss}
	ServiceSNAT = Table{9, "ServiceSNAT",
		"new service connections that need it: hairpin and masquerade to the gateway IP, or to the virtual IP when they go to the host (so must the node's own)",
		Miss{Next: &ConntrackCommit}}
	ConntrackCommit = Table{10, "ConntrackCommit",
		"commits new non-service connections (so their replies are not invalid), with `nat(src)` where the datapath resolves a source-port clash with it (a new source port only if the reply tuple is taken)",
		Miss{Next: &Output}}
	Output = Table{11, "Output",
		"out the chosen port (back out the ingress port for hairpin); non-service traffic from the host back to the host is dropped",
		Miss{Actions: []of.Action{of.OutputReg(outPortField.reg)}}}
)

// Tables lists the pipeline in order.
var Tables = []Table{Classifier, Neighbor, UnSNAT, ConntrackZone, ConntrackState, SessionAffinity,
	ServiceLB, EndpointDNAT, L3Forwarding, ServiceSNAT, ConntrackCommit, Output}
