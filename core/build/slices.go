package build

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	discovery "k8s.io/api/discovery/v1"
)

// candidate is an endpoint before categorization, with its topology hints.
type candidate struct {
	ep    graph.Endpoint
	hints *object.Hints // nil: none (kept by reference: a Service of 50 000 endpoints copies its candidates several times)
}

func (c *candidate) zoneHints() []string {
	if c.hints == nil {
		return nil
	}
	return c.hints.ForZones
}

func (c *candidate) nodeHints() []string {
	if c.hints == nil {
		return nil
	}
	return c.hints.ForNodes
}

func (c *candidate) hintedForZone(zone string) bool { return slices.Contains(c.zoneHints(), zone) }
func (c *candidate) hintedForNode(node string) bool { return slices.Contains(c.nodeHints(), node) }

// portKey matches a slice port to a service port: by name and protocol.
type portKey struct {
	name     string
	protocol graph.Protocol
}

// sliceEndpoint is a validated endpoint of one slice, port not yet known.
type sliceEndpoint struct {
	ip        netip.Addr
	place     graph.Place
	ready     bool
	serving   bool
	terminate bool
	hints     *object.Hints
}

// slicePort is a validated entry of a slice's ports.
type slicePort struct {
	key  portKey
	port uint16
}

// PreparedSlice is an EndpointSlice as builds use it: validated once, when it
// arrives (PrepareSlice), so that a Service's build only merges its
// slices. A change of one slice of a 50 000-endpoint Service then
// validates that slice's 1 000 endpoints, not the Service's 50 000.
// A PreparedSlice is read-only once made and does not depend on the node.
type PreparedSlice struct {
	Name       string
	skipped    bool            // SkipSlice: contributes nothing
	ports      []slicePort     // the valid ports, in the slice's order
	endpoints  []sliceEndpoint // the valid endpoints, sorted by address (stably: duplicates keep their order)
	rejections []Rejection     // what validation refused, endpoints first, then ports
}

// PrepareSlice validates an EndpointSlice for builds. Only the first
// address of an endpoint counts, as upstream uses it.
func PrepareSlice(s *object.EndpointSlice, opts Options) *PreparedSlice {
	ps := &PreparedSlice{Name: s.Name}
	if SkipSlice(s, opts) != "" {
		ps.skipped = true
		return ps
	}
	rej := rejections{obj: ObjectRef{Kind: "EndpointSlice", Namespace: s.Namespace, Name: s.Name}}
	ps.endpoints = validSliceEndpoints(s, &rej)
	slices.SortStableFunc(ps.endpoints, func(a, b sliceEndpoint) int { return a.ip.Compare(b.ip) })
	for i, p := range s.Ports {
		if key, port, ok := validSlicePort(p, i, &rej); ok {
			ps.ports = append(ps.ports, slicePort{key: key, port: port})
		}
	}
	ps.rejections = rej.list
	return ps
}

// SkipSlice says why an EndpointSlice is ignored as a whole ("" if used):
// the same label rules kube-proxy's informers select on.
func SkipSlice(s *object.EndpointSlice, opts Options) string {
	return skipLabels(s.ProxyName, s.HasProxyName, s.Headless, opts)
}

// validSliceEndpoints returns the valid endpoints of a slice, in its order.
func validSliceEndpoints(s *object.EndpointSlice, rej *rejections) []sliceEndpoint {
	var fam graph.IPFamily
	switch s.AddressType {
	case discovery.AddressTypeIPv4:
		fam = graph.IPv4
	case discovery.AddressTypeIPv6:
		fam = graph.IPv6
	default:
		rej.add("addressType", ReasonUnsupportedAddress, "address type %q is not proxied (only IPv4 and IPv6)", s.AddressType)
		return nil
	}
	out := make([]sliceEndpoint, 0, len(s.Endpoints))
	for i := range s.Endpoints {
		e := &s.Endpoints[i]
		f := func() string { return fmt.Sprintf("endpoints[%d].addresses[0]", i) }
		if e.NoAddress {
			rej.add(fmt.Sprintf("endpoints[%d].addresses", i), ReasonMissingAddress, "endpoint has no address")
			continue
		}
		ip, err := parseIP(e.Address)
		if err != nil {
			rej.add(f(), ReasonInvalidIP, "%v", err)
			continue
		}
		if graph.FamilyOf(ip) != fam {
			rej.add(f(), ReasonIPFamilyMismatch, "%s in a slice of address type %s", ip, s.AddressType)
			continue
		}
		if why := forbiddenEndpointIP(ip); why != "" {
			rej.add(f(), ReasonForbiddenIP, "%s is a %s", ip, why)
			continue
		}
		out = append(out, sliceEndpoint{
			ip: ip, place: graph.PlaceOf(e.NodeName(), e.Zone()),
			ready: e.Ready, serving: e.Serving, terminate: e.Terminating, hints: e.Hints,
		})
	}
	return out
}

func validSlicePort(p object.EndpointPort, i int, rej *rejections) (portKey, uint16, bool) {
	field := func() string { return fmt.Sprintf("ports[%d]", i) }
	if p.Name == nil {
		rej.add(field()+".name", ReasonMissingPortName, "port has no name (use \"\" for an unnamed service port)")
		return portKey{}, 0, false
	}
	if p.Port == nil || *p.Port < 1 || *p.Port > 65535 {
		got := "nil"
		if p.Port != nil {
			got = fmt.Sprint(*p.Port)
		}
		rej.add(field()+".port", ReasonInvalidPort, "port %s is outside 1..65535", got)
		return portKey{}, 0, false
	}
	var proto graph.Protocol = graph.TCP
	if p.Protocol != nil {
		var ok bool
		if proto, ok = parseProtocol(*p.Protocol); !ok {
			rej.add(field()+".protocol", ReasonUnknownProtocol, "protocol %q is not TCP, UDP or SCTP", *p.Protocol)
			return portKey{}, 0, false
		}
	}
	return portKey{name: *p.Name, protocol: proto}, uint16(*p.Port), true
}
