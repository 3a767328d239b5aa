package build

import (
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// This file says why categorize (categorize.go) kept or left out each
// endpoint: the answer `switchyard explain` gives. It does not decide
// anything itself: which endpoints are in which list is categorize's
// output, read back; only the reasons are named here, from the same
// predicates.

// Exclusion names the rule that left an endpoint out of a traffic
// policy's list.
type Exclusion string

// The reasons, in upstream kube-proxy's terms (CategorizeEndpoints).
const (
	// ExcludedNotReady: not ready, and not serving-and-terminating
	// either (never used).
	ExcludedNotReady Exclusion = "NotReady"
	// ExcludedTerminating: serving and terminating, but the list has
	// ready endpoints, which win.
	ExcludedTerminating Exclusion = "TerminatingWhileReady"
	// ExcludedOtherNodeHints and ExcludedOtherZoneHints: topology narrowed
	// the Cluster list to this node's (PreferSameNode) or this zone's
	// (PreferSameZone) hinted endpoints.
	ExcludedOtherNodeHints Exclusion = "HintedForOtherNodes"
	ExcludedOtherZoneHints Exclusion = "HintedForOtherZones"
	// ExcludedOnAnotherNode: a Local policy keeps this node's endpoints only.
	ExcludedOnAnotherNode Exclusion = "OnAnotherNode"
)

// Topology is the topology mode a family's Cluster list used, and why.
type Topology struct {
	Mode string      `json:"mode"` // TopologyNone, PreferSameNode or PreferSameZone
	Why  TopologyWhy `json:"why"`
}

// Topology modes (upstream's trafficDistribution values and hint kinds).
const (
	TopologyNone   = "None"
	PreferSameNode = "PreferSameNode"
	PreferSameZone = "PreferSameZone"
)

// TopologyWhy says why hints were used or ignored.
type TopologyWhy string

// Why a topology mode was chosen.
const (
	// HintsForThisNode and HintsForThisZone: every ready endpoint has
	// hints of that kind and at least one names this node (zone).
	HintsForThisNode TopologyWhy = "HintsForThisNode"
	HintsForThisZone TopologyWhy = "HintsForThisZone"
	// NoReadyEndpoints: hints are read from ready endpoints only.
	NoReadyEndpoints TopologyWhy = "NoReadyEndpoints"
	// NoHints: no ready endpoint has hints (no trafficDistribution, or no
	// topology-aware routing).
	NoHints TopologyWhy = "NoHints"
	// IncompleteHints: some ready endpoints have hints, but for each kind
	// of hint some ready endpoint has none of that kind.
	IncompleteHints TopologyWhy = "IncompleteHints"
	// NoHintForThisNode: every ready endpoint is hinted, but none for this
	// node or its zone (or the node has no zone).
	NoHintForThisNode TopologyWhy = "NoHintForThisNode"
	// ClusterNotUsed: the port uses no Cluster list in this family.
	ClusterNotUsed TopologyWhy = "ClusterNotUsed"
)

// EndpointVerdict is what categorization did with one endpoint: whether
// it is in the Cluster and Local lists, and if the port uses a list but
// the endpoint is not in it, why. A list the port does not use has no
// verdict.
type EndpointVerdict struct {
	Endpoint           graph.Endpoint
	InCluster, InLocal bool
	NotCluster         Exclusion // "" when in the list or the list is not used
	NotLocal           Exclusion
}

// Categorization is categorize's answer for one family, explained.
type Categorization struct {
	UsesCluster, UsesLocal bool
	Topology               Topology
	// ClusterFallback: no endpoint is ready, so the Cluster list is the
	// serving-and-terminating ones.
	ClusterFallback bool
	// HasEndpoints: a usable endpoint exists anywhere (an empty list then
	// drops rather than rejects).
	HasEndpoints bool
	Endpoints    []EndpointVerdict
}

// explainCategorized runs categorize on eps and explains its answer.
func explainCategorized(eps []candidate, pv policyView, nodeName, zone string) Categorization {
	out := categorize(eps, pv, nodeName, zone, nil)
	mode := topologyNone
	x := Categorization{UsesCluster: out.cluster != nil, UsesLocal: out.local != nil, HasEndpoints: out.hasAny,
		Topology: Topology{Mode: TopologyNone, Why: ClusterNotUsed}}
	if x.UsesCluster {
		mode = topologyFromHints(eps, nodeName, zone)
		x.Topology = explainTopology(eps, mode, nodeName, zone)
		x.ClusterFallback = len(out.cluster) > 0 && !out.cluster[0].ep.Ready
	}
	inCluster, inLocal := addrSet(out.cluster), addrSet(out.local)
	localReady := anyCandidate(out.local, func(c *candidate) bool { return c.ep.Ready })
	for i := range eps {
		c := &eps[i]
		v := EndpointVerdict{Endpoint: c.ep, InCluster: inCluster[c.ep.AddrPort()], InLocal: inLocal[c.ep.AddrPort()]}
		if x.UsesCluster && !v.InCluster {
			v.NotCluster = clusterExclusion(c, mode)
		}
		if x.UsesLocal && !v.InLocal {
			v.NotLocal = localExclusion(c, localReady)
		}
		x.Endpoints = append(x.Endpoints, v)
	}
	return x
}

// clusterExclusion is why c is not in the Cluster list. A
// serving-and-terminating endpoint is left out only when ready ones
// exist: with none, the list is every serving-and-terminating endpoint.
func clusterExclusion(c *candidate, mode topologyMode) Exclusion {
	switch {
	case !c.ep.Ready && servingTerminating(c):
		return ExcludedTerminating
	case !c.ep.Ready:
		return ExcludedNotReady
	case mode == topologySameNode:
		return ExcludedOtherNodeHints
	}
	return ExcludedOtherZoneHints
}

// localExclusion is why c is not in the Local list (localReady: the list
// holds this node's ready endpoints).
func localExclusion(c *candidate, localReady bool) Exclusion {
	switch {
	case !c.ep.Local:
		return ExcludedOnAnotherNode
	case servingTerminating(c) && localReady:
		return ExcludedTerminating
	}
	return ExcludedNotReady
}

// explainTopology says why mode was chosen for eps.
func explainTopology(eps []candidate, mode topologyMode, nodeName, zone string) Topology {
	switch mode {
	case topologySameNode:
		return Topology{Mode: PreferSameNode, Why: HintsForThisNode}
	case topologySameZone:
		return Topology{Mode: PreferSameZone, Why: HintsForThisZone}
	}
	anyReady, anyHints, allNode, allZone := false, false, true, true
	for i := range eps {
		c := &eps[i]
		if c.ep.Ready {
			anyReady = true
			anyHints = anyHints || len(c.nodeHints()) > 0 || len(c.zoneHints()) > 0
			allNode = allNode && len(c.nodeHints()) > 0
			allZone = allZone && len(c.zoneHints()) > 0
		}
	}
	why := NoHintForThisNode
	switch {
	case !anyReady:
		why = NoReadyEndpoints
	case !anyHints:
		why = NoHints
	case !allNode && !allZone:
		why = IncompleteHints
	}
	return Topology{Mode: TopologyNone, Why: why}
}

func addrSet(cs []candidate) map[netip.AddrPort]bool {
	set := make(map[netip.AddrPort]bool, len(cs))
	for i := range cs {
		set[cs[i].ep.AddrPort()] = true
	}
	return set
}

func anyCandidate(cs []candidate, f func(*candidate) bool) bool {
	for i := range cs {
		if f(&cs[i]) {
			return true
		}
	}
	return false
}
