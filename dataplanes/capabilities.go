package dataplanes

import (
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// Capability is a feature of the graph a driver may be unable to program.
// Features the core settles itself (topology, terminating fallback, traffic
// policy endpoint selection) are not capabilities: they arrive as endpoint
// lists every driver programs the same way.
type Capability string

// The capabilities a service port can need.
const (
	IPv4             Capability = "ipv4"
	IPv6             Capability = "ipv6"
	TCP              Capability = "tcp"
	UDP              Capability = "udp"
	SCTP             Capability = "sctp"
	NodePort         Capability = "nodeport"
	ExternalIPs      Capability = "external-ips"
	LoadBalancerIPs  Capability = "load-balancer-ips"
	SourceRanges     Capability = "source-ranges"
	SessionAffinity  Capability = "session-affinity"
	AffinityTimeout  Capability = "affinity-timeout"
	ExternalLocal    Capability = "external-traffic-local"
	InternalLocal    Capability = "internal-traffic-local"
	ShortCircuit     Capability = "short-circuit"
	RejectNoEndpoint Capability = "reject-no-endpoints"
	// MixedTargetPorts: one service port whose endpoints listen on
	// different port numbers (a named targetPort resolving differently).
	MixedTargetPorts Capability = "mixed-target-ports"
)

// All lists every capability a service port can need, in display order.
var All = []Capability{IPv4, IPv6, TCP, UDP, SCTP, NodePort, ExternalIPs, LoadBalancerIPs,
	SourceRanges, SessionAffinity, AffinityTimeout, ExternalLocal, InternalLocal, ShortCircuit, RejectNoEndpoint, MixedTargetPorts}

// PodNetwork is a capability of the driver, not of a service port: the
// driver is the node's pod network itself (its CNI attaches pods; it
// carries the host's traffic to pods and Services, pods across nodes, and
// pods to the outside, masqueraded), as Antrea's agent is. Drivers without
// it program Services on a pod network another component provides.
const PodNetwork Capability = "pod-network"

// UpstreamSources is a capability of the driver as a whole: an endpoint
// sees the source upstream's masquerade rule gives (the client's own, or
// an address of this node: core/explain, docs/explain.md). Drivers that
// SNAT more (HNS without DSR) lack it; `switchyard explain` then states
// upstream's rule and the dataplane's trace shows theirs.
const UpstreamSources Capability = "upstream-sources"

// NodeCapabilities lists the capabilities of a driver as a whole.
var NodeCapabilities = []Capability{PodNetwork, UpstreamSources}

// Capabilities is what a driver declares: the capabilities it has, and for
// each one it lacks, why (shown to users and in the conformance matrix).
type Capabilities struct {
	Supported []Capability
	Gaps      map[Capability]string
}

// Has reports whether the driver has c.
func (c Capabilities) Has(x Capability) bool { return slices.Contains(c.Supported, x) }

// Reason says why the driver lacks x ("" if it has it).
func (c Capabilities) Reason(x Capability) string {
	if c.Has(x) {
		return ""
	}
	if r := c.Gaps[x]; r != "" {
		return r
	}
	return "not supported by this driver"
}

// Needs lists the capabilities a service port needs to be fully honoured.
func Needs(sp *graph.ServicePort) []Capability {
	var need []Capability
	fams := sp.Families()
	if fams.Has(graph.IPv4) {
		need = append(need, IPv4)
	}
	if fams.Has(graph.IPv6) {
		need = append(need, IPv6)
	}
	switch sp.Name.Protocol {
	case graph.TCP:
		need = append(need, TCP)
	case graph.UDP:
		need = append(need, UDP)
	case graph.SCTP:
		need = append(need, SCTP)
	}
	if sp.NodePort != 0 {
		need = append(need, NodePort)
	}
	if len(sp.ExternalIPs) > 0 {
		need = append(need, ExternalIPs)
	}
	if len(sp.LoadBalancerIPs) > 0 {
		need = append(need, LoadBalancerIPs)
		if len(sp.LoadBalancerSourceRanges) > 0 {
			need = append(need, SourceRanges)
		}
	}
	if sp.SessionAffinity.ClientIP {
		need = append(need, SessionAffinity, AffinityTimeout)
	}
	if sp.ExternalTrafficPolicy == graph.PolicyLocal && sp.ExternallyAccessible() {
		need = append(need, ExternalLocal, ShortCircuit)
	}
	if sp.InternalTrafficPolicy == graph.PolicyLocal {
		need = append(need, InternalLocal)
	}
	if fams&^sp.UsableFamilies != 0 {
		need = append(need, RejectNoEndpoint)
	}
	if mixedPorts(sp) {
		need = append(need, MixedTargetPorts)
	}
	return need
}

// Gap is one capability a service port needs and a driver lacks.
type Gap struct {
	Capability Capability
	Reason     string
}

// Unhonoured lists what of a service port a driver cannot program.
func Unhonoured(sp *graph.ServicePort, c Capabilities) []Gap {
	var gaps []Gap
	for _, n := range Needs(sp) {
		if !c.Has(n) {
			gaps = append(gaps, Gap{Capability: n, Reason: c.Reason(n)})
		}
	}
	return gaps
}

// mixedPorts reports whether a service port's endpoints listen on more
// than one port number.
func mixedPorts(sp *graph.ServicePort) bool {
	var port uint16
	for _, list := range sp.EndpointLists() {
		for ep := range list.All() {
			if port != 0 && ep.Port != port {
				return true
			}
			port = ep.Port
		}
	}
	return false
}
