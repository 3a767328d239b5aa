package build

// This file is upstream kube-proxy's CategorizeEndpoints rule, written anew.
//
// The rule, in words. For one service port and one IP family:
//
//   - The port "uses Cluster endpoints" unless its internal traffic policy is
//     Local and it has no external frontend of this family. It "uses Local
//     endpoints" if its internal policy is Local, or its external policy is
//     Local and it has an external frontend of this family.
//
//   - Cluster endpoints are the Ready endpoints, narrowed by topology when a
//     topology mode applies. If none are Ready anywhere, they are the
//     endpoints that are Serving and Terminating (graceful termination).
//
//   - A topology mode applies only when every Ready endpoint carries hints of
//     that kind and at least one is hinted for this node: PreferSameNode
//     (node hints naming this node) is tried first, then PreferSameZone
//     (zone hints naming this node's zone). Otherwise no topology is used.
//     Topology never narrows Local endpoints.
//
//   - Local endpoints are this node's Ready endpoints; if it has none, this
//     node's Serving-and-Terminating ones.
//
//   - The port "has endpoints" if it has a usable endpoint anywhere: a Cluster
//     endpoint, or (when it uses Local endpoints) any Ready endpoint or any
//     Serving-and-Terminating one on any node. A frontend with an empty list
//     rejects when the port has no endpoints, and drops otherwise.

// policyView is what categorization needs to know of a service port in one
// family.
type policyView struct {
	itpLocal             bool
	etpLocal             bool
	externallyAccessible bool // NodePort, or an ExternalIP or LB IP of this family
}

func (p policyView) usesCluster() bool { return !p.itpLocal || p.externallyAccessible }
func (p policyView) usesLocal() bool {
	return p.itpLocal || (p.etpLocal && p.externallyAccessible)
}

// topologyMode is how cluster endpoints are narrowed by hints.
type topologyMode int

const (
	topologyNone topologyMode = iota
	topologySameZone
	topologySameNode
)

// categorized is one family's endpoints sorted by traffic policy. A nil list
// means "this port never uses that policy"; an empty non-nil list means "it
// does, and there is nothing to reach".
type categorized struct {
	cluster []candidate
	local   []candidate
	hasAny  bool
}

// categorize applies the rule above to the endpoints of one family. The
// lists it returns are eps itself (when every endpoint is kept) or in sc's
// buffers (nil sc: fresh ones), valid until sc is used again.
func categorize(eps []candidate, pv policyView, nodeName, zone string, sc *scratch) categorized {
	if sc == nil {
		sc = &scratch{}
	}
	var out categorized
	if len(eps) == 0 {
		if pv.usesCluster() {
			out.cluster = []candidate{}
		}
		if pv.usesLocal() {
			out.local = []candidate{}
		}
		return out
	}

	if pv.usesCluster() {
		mode := topologyFromHints(eps, nodeName, zone)
		out.cluster = filter(&sc.cluster, eps, func(c *candidate) bool {
			return c.ep.Ready && availableForTopology(c, mode, nodeName, zone)
		})
		if len(out.cluster) == 0 {
			out.cluster = filter(&sc.cluster, eps, servingTerminating)
		}
		out.hasAny = len(out.cluster) > 0
	}
	if !pv.usesLocal() {
		return out
	}

	var localReady, localServingTerminating bool
	for i := range eps {
		c := &eps[i]
		switch {
		case c.ep.Ready:
			out.hasAny = true
			localReady = localReady || c.ep.Local
		case servingTerminating(c):
			out.hasAny = true
			localServingTerminating = localServingTerminating || c.ep.Local
		}
	}
	switch {
	case localReady:
		out.local = filter(&sc.local, eps, func(c *candidate) bool { return c.ep.Local && c.ep.Ready })
	case localServingTerminating:
		out.local = filter(&sc.local, eps, func(c *candidate) bool { return c.ep.Local && servingTerminating(c) })
	default:
		out.local = []candidate{}
	}
	return out
}

func servingTerminating(c *candidate) bool { return c.ep.Serving && c.ep.Terminating }

// topologyFromHints picks the topology mode the Ready endpoints allow.
func topologyFromHints(eps []candidate, nodeName, zone string) topologyMode {
	anyReady := false
	allNodeHints, forNode := true, false
	allZoneHints, forZone := true, false
	for i := range eps {
		c := &eps[i]
		if !c.ep.Ready {
			continue
		}
		anyReady = true
		if len(c.nodeHints()) == 0 {
			allNodeHints = false
		} else if c.hintedForNode(nodeName) {
			forNode = true
		}
		if len(c.zoneHints()) == 0 {
			allZoneHints = false
		} else if c.hintedForZone(zone) {
			forZone = true
		}
		if !allNodeHints && !allZoneHints {
			return topologyNone // an endpoint without hints: none can apply
		}
	}
	switch {
	case !anyReady:
		return topologyNone
	case allNodeHints && forNode:
		return topologySameNode
	case allZoneHints && forZone:
		return topologySameZone
	}
	return topologyNone
}

func availableForTopology(c *candidate, mode topologyMode, nodeName, zone string) bool {
	switch mode {
	case topologySameNode:
		return c.hintedForNode(nodeName)
	case topologySameZone:
		return c.hintedForZone(zone)
	}
	return true
}

// filter returns the candidates keep accepts, in order: eps itself when it
// accepts all of them, else a list in *buf (grown as needed), or an empty
// non-nil list for none.
func filter(buf *[]candidate, eps []candidate, keep func(*candidate) bool) []candidate {
	i := 0
	for i < len(eps) && keep(&eps[i]) {
		i++
	}
	if i == len(eps) {
		return eps
	}
	if cap(*buf) < len(eps) {
		*buf = make([]candidate, 0, len(eps))
	}
	out := append((*buf)[:0], eps[:i]...)
	for j := i + 1; j < len(eps); j++ {
		if keep(&eps[j]) {
			out = append(out, eps[j])
		}
	}
	if len(out) == 0 {
		return []candidate{}
	}
	return out
}
