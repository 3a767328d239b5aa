package graph

import (
	"net/netip"
	"slices"
)

// FrontendKind names a way into a service port.
type FrontendKind string

// The frontend kinds.
const (
	FrontendClusterIP    FrontendKind = "ClusterIP"
	FrontendNodePort     FrontendKind = "NodePort"
	FrontendExternalIP   FrontendKind = "ExternalIP"
	FrontendLoadBalancer FrontendKind = "LoadBalancerIP"
)

// ListKind names which of a service port's endpoint lists a connection
// uses.
type ListKind string

// The lists (ServicePort's InternalEndpoints, ExternalEndpoints,
// ShortCircuitEndpoints).
const (
	ListInternal     ListKind = "Internal"
	ListExternal     ListKind = "External"
	ListShortCircuit ListKind = "ShortCircuit"
)

// RouteAction is what a frontend does with a connection.
type RouteAction string

// The actions: forward to one of the endpoints, or, with none, reject or
// drop (NoEndpointsAction); a load-balancer IP drops sources outside its
// loadBalancerSourceRanges.
const (
	Forward          RouteAction = "forward"
	RejectNoEndpoint RouteAction = RouteAction(Reject)
	DropNoEndpoint   RouteAction = RouteAction(Drop)
	DropSourceRange  RouteAction = "drop-source-range"
)

// Connection is a new connection as the proxy sees it.
type Connection struct {
	Src, Dst netip.Addr
	Port     uint16
	Protocol Protocol
	// FromThisNode: it starts on this node (one of its pods, or the node
	// itself); such a connection to an external frontend of an
	// externalTrafficPolicy Local port short-circuits to the cluster-wide
	// endpoints, as upstream.
	FromThisNode bool
}

// Route is what one service port does with a connection to one of its
// frontends.
type Route struct {
	ServicePort *ServicePort
	Frontend    FrontendKind
	List        ListKind
	// Endpoints are the list's endpoints of the frontend's family: one of
	// them gets the connection when Action is Forward.
	Endpoints []Endpoint
	Action    RouteAction
}

// Routes finds what the snapshot does with c: one route per service port
// with a frontend at c's destination (node is this node: a NodePort is on
// each of its addresses). Two ports with one frontend are a conflict the
// dataplane resolves (one is programmed); both are listed.
func (s Snapshot) Routes(c Connection) []Route {
	var out []Route
	for _, sp := range s.ServicePorts {
		if sp.Name.Protocol != c.Protocol {
			continue
		}
		if kind, ok := sp.frontendAt(c.Dst, c.Port, s.Node.IPs); ok {
			out = append(out, sp.route(kind, c))
		}
	}
	return out
}

// frontendAt finds the port's frontend at dst:port.
func (sp *ServicePort) frontendAt(dst netip.Addr, port uint16, nodeIPs []netip.Addr) (FrontendKind, bool) {
	switch {
	case port == sp.Port && slices.Contains(sp.ClusterIPs, dst):
		return FrontendClusterIP, true
	case port == sp.Port && slices.Contains(sp.ExternalIPs, dst):
		return FrontendExternalIP, true
	case port == sp.Port && slices.Contains(sp.LoadBalancerIPs, dst):
		return FrontendLoadBalancer, true
	case port == sp.NodePort && port != 0 && slices.Contains(nodeIPs, dst):
		return FrontendNodePort, true
	}
	return "", false
}

// route is what the port does with c through a frontend of the given kind.
func (sp *ServicePort) route(kind FrontendKind, c Connection) Route {
	r := Route{ServicePort: sp, Frontend: kind, List: ListInternal}
	list := sp.InternalEndpoints
	if kind != FrontendClusterIP {
		r.List, list = ListExternal, sp.ExternalEndpoints
		if c.FromThisNode && sp.ExternalTrafficPolicy == PolicyLocal {
			r.List, list = ListShortCircuit, sp.ShortCircuitEndpoints
		}
	}
	fam := FamilyOf(c.Dst)
	r.Endpoints = list.OfFamily(fam).Slice()
	switch {
	case kind == FrontendLoadBalancer && filtered(sp.LoadBalancerSourceRanges, fam, c.Src):
		r.Action = DropSourceRange
	case len(r.Endpoints) > 0:
		r.Action = Forward
	default:
		r.Action = RouteAction(sp.NoEndpointsAction(fam))
	}
	return r
}

// filtered reports whether ranges keep src out: a family with no range is
// not filtered (docs/semantics.md).
func filtered(ranges []netip.Prefix, fam IPFamily, src netip.Addr) bool {
	hasRange := false
	for _, r := range ranges {
		if FamilyOf(r.Addr()) == fam {
			if r.Contains(src) {
				return false
			}
			hasRange = true
		}
	}
	return hasRange
}
