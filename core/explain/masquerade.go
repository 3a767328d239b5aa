package explain

import (
	"net/netip"
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// MasqueradeWhy names the rule that decides whether a new connection is
// masqueraded (SNATed to an address of this node).
type MasqueradeWhy string

// The rules, upstream's iptables and nftables proxiers' with
// --masquerade-all off and local traffic told by this node's pod CIDRs
// (--detect-local-mode=NodeCIDR; docs/explain.md).
const (
	// FromAPod: a ClusterIP connection from one of this node's pods keeps
	// its source.
	FromAPod MasqueradeWhy = "FromAPod"
	// NotFromAPod: a ClusterIP connection from anything else (the node
	// itself, outside) is masqueraded, so that replies come back through
	// this node.
	NotFromAPod MasqueradeWhy = "NotFromAPod"
	// ExternalPolicyCluster: an external frontend (NodePort, external IP,
	// load-balancer IP) of an externalTrafficPolicy Cluster port is
	// masqueraded, whoever the client.
	ExternalPolicyCluster MasqueradeWhy = "ExternalPolicyCluster"
	// ExternalPolicyLocal: an external frontend of an
	// externalTrafficPolicy Local port, from outside this node, keeps the
	// client's source (the point of the policy).
	ExternalPolicyLocal MasqueradeWhy = "ExternalPolicyLocal"
	// ShortCircuitFromAPod: a Local port's external frontend reached from
	// one of this node's pods goes to the cluster-wide endpoints with its
	// source kept.
	ShortCircuitFromAPod MasqueradeWhy = "ShortCircuitFromAPod"
	// ShortCircuitFromTheNode: the same from the node's own address is
	// masqueraded.
	ShortCircuitFromTheNode MasqueradeWhy = "ShortCircuitFromTheNode"
)

// The sources an endpoint sees.
const (
	SourceClient = "client" // the connection's own source
	SourceNode   = "node"   // an address of this node (masqueraded)
)

// masquerade decides whether upstream masquerades c through a frontend of
// the given kind of sp. A hairpin (the endpoint is the client itself) is
// masqueraded whatever this says: Endpoint.Hairpin.
func masquerade(sp *graph.ServicePort, kind graph.FrontendKind, c graph.Connection, node graph.Node) MasqueradeWhy {
	fromNode := slices.Contains(node.IPs, c.Src)
	fromPod := !fromNode && slices.ContainsFunc(node.PodCIDRs, func(p netip.Prefix) bool { return p.Contains(c.Src) })
	switch {
	case kind == graph.FrontendClusterIP && fromPod:
		return FromAPod
	case kind == graph.FrontendClusterIP:
		return NotFromAPod
	case sp.ExternalTrafficPolicy != graph.PolicyLocal:
		return ExternalPolicyCluster
	case fromPod:
		return ShortCircuitFromAPod
	case fromNode:
		return ShortCircuitFromTheNode
	}
	return ExternalPolicyLocal
}

// Masquerades reports whether the rule SNATs the connection.
func (w MasqueradeWhy) Masquerades() bool {
	return w == NotFromAPod || w == ExternalPolicyCluster || w == ShortCircuitFromTheNode
}

// sourceSeen is the source a (non-hairpin) endpoint sees under the rule.
func (w MasqueradeWhy) sourceSeen() string {
	if w.Masquerades() {
		return SourceNode
	}
	return SourceClient
}
