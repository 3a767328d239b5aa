package pipeline

// Flow priorities, table by table, highest first. Within a table the
// order is what matters (a packet takes the highest-priority flow that
// matches it); the names say what each flow is.
const (
	// Every table: its miss flow, made from Table.Miss.
	priorityMiss uint16 = 0

	// Classifier.
	prioritySourceByAddress uint16 = 210 // from the gateway with a node or gateway IP: the node's own
	prioritySourceByPort    uint16 = 200 // a pod's port, the gateway (forwarded), the tunnel

	// Neighbor.
	priorityARPProbe      uint16 = 220 // ARP probes (sender 0.0.0.0): unanswered
	priorityOwnAddress    uint16 = 210 // a pod asking for its own address: unanswered
	priorityNeighborReply uint16 = 200 // ARP answered in place; neighbour solicitations to the controller
	priorityNeighborDrop  uint16 = 150 // other neighbour discovery, multicast, broadcast
	priorityIPOnward      uint16 = 100 // IP packets go on

	// UnSNAT, ConntrackZone and ConntrackCommit.
	priorityConntrackFromTunnel uint16 = 210 // ConntrackCommit: a connection from the tunnel, marked
	priorityConntrack           uint16 = 200

	// ConntrackState.
	priorityInvalid              uint16 = 200 // conntrack says invalid: dropped
	priorityServiceOriginalLater uint16 = 195 // as the next, a later fragment: its destination rewritten to the endpoint first
	priorityServiceOriginal      uint16 = 190 // a committed service connection, original direction: SNAT re-applied
	priorityServiceReplyLater    uint16 = 187 // as the next, a later fragment: its source rewritten to the frontend
	priorityServiceReply         uint16 = 185 // a service connection's reply
	priorityEstablished          uint16 = 180 // any other connection conntrack knows
	priorityNewConnection        uint16 = 100 // a new connection: to selection

	// SessionAffinity.
	priorityLaterFragmentPort uint16 = 210 // a later fragment: its frontend IP's only UDP port
	priorityLearned           uint16 = 200 // the flows learned for ClientIP affinity

	// ServiceLB.
	priorityFrontendFromNode  uint16 = 220 // externalTrafficPolicy Local: the node's own traffic, short-circuited and masqueraded
	priorityFrontendFromLocal uint16 = 210 // externalTrafficPolicy Local: this node's pods, short-circuited
	priorityFrontend          uint16 = 200 // a frontend: to its group (or reject, drop)
	priorityLearnAffinity     uint16 = 190 // ClientIP affinity: learn the endpoint the group chose
	prioritySourceRangeDrop   uint16 = 150 // a LoadBalancer IP from outside its source ranges
	priorityAffinityChosen    uint16 = 10  // an endpoint a learned flow chose: to EndpointDNAT

	// EndpointDNAT.
	priorityEndpointDNAT uint16 = 200 // DNAT to the chosen endpoint
	priorityReselect     uint16 = 190 // a learned endpoint that is gone: choose again

	// L3Forwarding.
	priorityLaterFragment   uint16 = 250 // a later fragment of a connection just DNATed: its destination rewritten to the endpoint
	priorityToPod           uint16 = 200 // a pod of this node
	priorityReplyToPeerNode uint16 = 195 // a reply to a peer's own address on a connection it sent through the tunnel: back through it
	priorityToPeer          uint16 = 190 // another node's pod CIDR, through the tunnel
	priorityToGatewayIP     uint16 = 185 // a gateway IP: the host's
	priorityNoSuchPod       uint16 = 180 // this node's pod CIDR, no pod there: dropped
	priorityToHost          uint16 = 10  // anything else: the host

	// ServiceSNAT.
	priorityHairpin           uint16 = 210 // a pod to itself through a service
	priorityNodeThroughTunnel uint16 = 205 // overlay: the node's own, to another node's endpoint: no SNAT
	priorityMasqueradeToHost  uint16 = 200 // masqueraded, leaving through the host: the virtual IP
	priorityMasquerade        uint16 = 190 // masqueraded: the gateway IP
	priorityNodeToHost        uint16 = 180 // the node's own service connection back to the host: the virtual IP

	// Output.
	priorityHostLoop uint16 = 210 // the host's non-service traffic back to the host: dropped
	priorityBackOut  uint16 = 200 // to the ingress port: out of it (hairpin)
)
