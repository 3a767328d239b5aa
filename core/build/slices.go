package build

import (
	"cmp"
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
	local     bool // on the node the graph is for
	ready     bool
	serving   bool
	terminate bool
	hints     *object.Hints
}

// SkipSlice says why an EndpointSlice is ignored as a whole ("" if used):
// the same label rules kube-proxy's informers select on.
func SkipSlice(s *object.EndpointSlice, opts Options) string {
	return skipLabels(s.ProxyName, s.HasProxyName, s.Headless, opts)
}

// collectEndpoints merges a Service's slices into one deduplicated endpoint
// list per port (name, protocol), as upstream's EndpointSliceCache does:
// an endpoint is keyed by ip:port; when several slices carry the same one,
// a non-terminating copy wins over a terminating one. Slices are visited in
// name order, so the result never depends on map order.
func collectEndpoints(sl []*object.EndpointSlice, node string, opts Options, out *[]Rejection) map[portKey][]candidate {
	sorted := slices.Clone(sl)
	slices.SortFunc(sorted, func(a, b *object.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })

	// A port's list holds at most every endpoint of every slice: sized
	// once, a Service of 50 slices of 1 000 does not grow it six times.
	total := 0
	for _, s := range sorted {
		total += len(s.Endpoints)
	}
	merged := map[portKey][]candidate{}
	for _, s := range sorted {
		if SkipSlice(s, opts) != "" {
			continue
		}
		rej := rejections{obj: ObjectRef{Kind: "EndpointSlice", Namespace: s.Namespace, Name: s.Name}}
		eps := validSliceEndpoints(s, node, &rej)
		for i, p := range s.Ports {
			key, port, ok := validSlicePort(p, i, &rej)
			if !ok {
				continue
			}
			list := merged[key]
			if list == nil {
				list = make([]candidate, 0, total)
			}
			for _, e := range eps {
				list = append(list, candidate{
					ep: graph.Endpoint{
						IP: e.ip, Port: port, Place: e.place, Local: e.local,
						Ready: e.ready, Serving: e.serving, Terminating: e.terminate,
					},
					hints: e.hints,
				})
			}
			merged[key] = list
		}
		*out = append(*out, rej.list...)
	}
	for key, list := range merged {
		merged[key] = dedup(list)
	}
	return merged
}

// dedup sorts candidates by ip:port and keeps one per ip:port: the last
// non-terminating copy in visit order if there is one, else the first (the
// outcome of upstream's "overwrite unless terminating" loop).
func dedup(list []candidate) []candidate {
	slices.SortStableFunc(list, func(a, b candidate) int { return graph.CompareEndpoints(a.ep, b.ep) })
	out := list[:0]
	for i := 0; i < len(list); {
		j, pick := i+1, i
		for j < len(list) && graph.CompareEndpoints(list[i].ep, list[j].ep) == 0 {
			if !list[j].ep.Terminating {
				pick = j
			}
			j++
		}
		out = append(out, list[pick])
		i = j
	}
	return out
}

// validSliceEndpoints validates every endpoint of a slice once; only the
// first address counts, as upstream uses it. node is the graph's node
// ("": none is local).
func validSliceEndpoints(s *object.EndpointSlice, node string, rej *rejections) []sliceEndpoint {
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
			ip: ip, place: graph.PlaceOf(e.NodeName(), e.Zone()), local: node != "" && e.NodeName() == node,
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
