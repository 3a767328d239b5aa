package graph

import (
	"net/netip"
	"unique"
)

// Protocol is a service port's transport protocol.
type Protocol string

// The protocols a service port may use.
const (
	TCP  Protocol = "TCP"
	UDP  Protocol = "UDP"
	SCTP Protocol = "SCTP"
)

// TrafficPolicy is a Service's internal or external traffic policy.
type TrafficPolicy string

// The two traffic policies.
const (
	PolicyCluster TrafficPolicy = "Cluster"
	PolicyLocal   TrafficPolicy = "Local"
)

// ServicePortName identifies one service port: namespace/name:port/protocol.
type ServicePortName struct {
	Namespace string
	Name      string
	Port      string // the port's name in spec.ports; "" for an unnamed single port
	Protocol  Protocol
}

// String renders the name as "namespace/name:port/protocol" (joined, not
// formatted: the OVS driver names every service port's owner by it, in
// every full sync).
func (n ServicePortName) String() string {
	return n.Namespace + "/" + n.Name + ":" + n.Port + "/" + string(n.Protocol)
}

// Service renders the owning Service as "namespace/name".
func (n ServicePortName) Service() string { return n.Namespace + "/" + n.Name }

// Less orders names by namespace, name, port name and protocol.
func (n ServicePortName) Less(o ServicePortName) bool {
	if n.Namespace != o.Namespace {
		return n.Namespace < o.Namespace
	}
	if n.Name != o.Name {
		return n.Name < o.Name
	}
	if n.Port != o.Port {
		return n.Port < o.Port
	}
	return n.Protocol < o.Protocol
}

// SessionAffinity is a service port's ClientIP affinity.
type SessionAffinity struct {
	ClientIP       bool  `json:"clientIP"`
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
}

// Endpoint is one backend of a service port. Endpoints compare with ==.
// (Its JSON: endpointJSON.)
type Endpoint struct {
	IP          netip.Addr
	Port        uint16
	Local       bool
	Ready       bool
	Serving     bool
	Terminating bool
	// Place is the endpoint's node and zone (Node, Zone).
	Place Place
}

// Node is the endpoint's node ("" when unset).
func (e Endpoint) Node() string { return e.Place.Node() }

// Zone is the endpoint's zone ("" when unset).
func (e Endpoint) Zone() string { return e.Place.Zone() }

// Place is a node and a zone, each pair kept once (a unique.Handle): an
// endpoint carries one word for them instead of two strings, and two
// places compare with == (endpoints are most of the graph's memory:
// docs/scale.md, "Figures behind the code").
type Place struct{ h unique.Handle[place] }

type place struct{ node, zone string }

// PlaceOf is the place of a node and zone ("" when unset).
func PlaceOf(node, zone string) Place {
	if node == "" && zone == "" {
		return Place{}
	}
	return Place{unique.Make(place{node, zone})}
}

// Node is the place's node ("" when unset).
func (p Place) Node() string {
	if p == (Place{}) {
		return ""
	}
	return p.h.Value().node
}

// Zone is the place's zone ("" when unset).
func (p Place) Zone() string {
	if p == (Place{}) {
		return ""
	}
	return p.h.Value().zone
}

// AddrPort is the endpoint's IP and port.
func (e Endpoint) AddrPort() netip.AddrPort { return netip.AddrPortFrom(e.IP, e.Port) }

// String renders the endpoint as "ip:port" ("[ip]:port" for IPv6).
func (e Endpoint) String() string { return e.AddrPort().String() }

// ServicePort is one entry of the graph: a service port, its frontends, and
// the endpoints each kind of traffic to it may reach from this node.
//
// Endpoint lists hold both IP families side by side (IPv4 first); a frontend
// of one family only ever uses endpoints of the same family (OfFamily).
// Every list is sorted, so two equal service ports compare equal field by
// field. Lists of one service port (and of its next versions) share parts.
type ServicePort struct {
	Name ServicePortName

	// Frontends.
	ClusterIPs               []netip.Addr   // one per family, primary family first
	Port                     uint16         // the service port number
	NodePort                 uint16         // 0 when the port has none
	ExternalIPs              []netip.Addr   // spec.externalIPs of the service's families
	LoadBalancerIPs          []netip.Addr   // VIP-mode status.loadBalancer.ingress IPs
	LoadBalancerSourceRanges []netip.Prefix // source filter for LoadBalancerIPs

	SessionAffinity SessionAffinity

	// Traffic policies as they take effect: ExternalTrafficPolicy is Cluster
	// for a port that is not externally accessible, as upstream treats it.
	InternalTrafficPolicy TrafficPolicy
	ExternalTrafficPolicy TrafficPolicy
	HealthCheckNodePort   uint16 // set for LoadBalancer services with ETP=Local

	// InternalEndpoints are reached by traffic to the ClusterIPs.
	InternalEndpoints EndpointList
	// ExternalEndpoints are reached by traffic to NodePort, ExternalIPs and
	// LoadBalancerIPs that comes from outside this node.
	ExternalEndpoints EndpointList
	// ShortCircuitEndpoints are reached by traffic that starts on this node
	// (its pods or the node itself) towards an external frontend of an
	// ETP=Local port: upstream sends it to the cluster-wide endpoints rather
	// than dropping it. Empty when ExternalTrafficPolicy is Cluster, where
	// such traffic uses ExternalEndpoints like any other.
	ShortCircuitEndpoints EndpointList

	// UsableFamilies says, per IP family, whether the port has a usable
	// endpoint anywhere in the cluster. A frontend of a family without one
	// must reject (TCP RST / ICMP unreachable); a frontend of a family with
	// one but an empty endpoint list for its traffic kind must drop.
	UsableFamilies FamilySet

	// Annotations holds the Service annotations the core was asked to carry
	// (drivers declare the keys they read).
	Annotations map[string]string
}

// String renders the service port's name.
func (sp *ServicePort) String() string { return sp.Name.String() }

// EndpointLists are the port's three endpoint lists: internal, external,
// short-circuit (often one list shared).
func (sp *ServicePort) EndpointLists() [3]EndpointList {
	return [3]EndpointList{sp.InternalEndpoints, sp.ExternalEndpoints, sp.ShortCircuitEndpoints}
}

// Families lists the IP families the port serves (those of its ClusterIPs).
func (sp *ServicePort) Families() FamilySet {
	var s FamilySet
	for _, ip := range sp.ClusterIPs {
		s = s.With(FamilyOf(ip))
	}
	return s
}

// ExternallyAccessible reports whether the port has any external frontend.
func (sp *ServicePort) ExternallyAccessible() bool {
	return sp.NodePort != 0 || len(sp.ExternalIPs) > 0 || len(sp.LoadBalancerIPs) > 0
}

// NoEndpointsAction says what a frontend of family f must do with traffic
// that finds an empty endpoint list.
func (sp *ServicePort) NoEndpointsAction(f IPFamily) NoEndpointsAction {
	if sp.UsableFamilies.Has(f) {
		return Drop
	}
	return Reject
}

// NoEndpointsAction is what a frontend does when its endpoint list is empty.
type NoEndpointsAction string

// The two actions, as upstream kube-proxy takes them.
const (
	Reject NoEndpointsAction = "reject" // no usable endpoint anywhere
	Drop   NoEndpointsAction = "drop"   // endpoints exist, but none this traffic may use
)

// Node is what the graph knows of the node it was computed for.
type Node struct {
	Name string
	Zone string // topology.kubernetes.io/zone; "" when unlabelled
	// IPs are the node's primary addresses, at most one per family (the first
	// InternalIP of each family, else the first ExternalIP), as upstream picks
	// them for NodePorts.
	IPs []netip.Addr
	// PodCIDRs are the node's spec.podCIDRs: the ranges its pods' addresses
	// come from, at most one per family, in the Node's order.
	PodCIDRs []netip.Prefix
}

// Snapshot is the whole graph for one node, sorted by service port name.
type Snapshot struct {
	Node Node
	// Peers are the cluster's other nodes, sorted by name, for drivers that
	// also build the pod network between nodes (dataplanes.PeerReader);
	// empty for the others.
	Peers        []Node
	ServicePorts []*ServicePort
}
