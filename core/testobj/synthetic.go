package testobj

import (
	"bytes"
	"fmt"
	"net/netip"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/switchyard-proxy/switchyard/core/object"
)

// Cluster is a synthetic cluster for benchmarks and scale tests.
type Cluster struct {
	Services []*v1.Service
	Slices   []*discovery.EndpointSlice
	Node     *v1.Node
}

// SyntheticNodePortBase is the first node port of a synthetic cluster; its
// node ports go past the API server's default range from 700 Services on
// (a node-port range of 30000-49999 holds them up to 50k Services).
const SyntheticNodePortBase = 30000

// Synthetic builds n Services with epsPer endpoints each, spread over 10
// nodes and 2 zones: 70% ClusterIP, 20% NodePort, 10% LoadBalancer with
// externalTrafficPolicy: Local. Node "node-0" is the local one (pod CIDR
// 10.244.0.0/24; endpoints are 10.64.0.0/10 addresses).
func Synthetic(n, epsPer int) Cluster {
	c := Cluster{Node: WithPodCIDRs(Node("node-0", "zone-0", "192.168.0.10"), "10.244.0.0/24")}
	svcBase := netip.MustParseAddr("10.96.0.0").As4()
	epIndex := 0
	for i := range n {
		name := fmt.Sprintf("svc-%05d", i)
		ns := fmt.Sprintf("ns-%02d", i%50)
		ip := svcBase
		ip[2], ip[3] = byte(i>>8), byte(i)
		ip[1] += byte(i >> 16)
		opts := []ServiceOption{ClusterIPs(netip.AddrFrom4(ip).String()), Port("http", v1.ProtocolTCP, 80, 0)}
		// Node ports are unique, as the API server makes them: node ports
		// from SyntheticNodePortBase (3 in every 10 Services), health
		// check node ports after them.
		nodePort := int32(SyntheticNodePortBase + i/10*3 + i%10 - 7)
		switch i % 10 {
		case 7, 8:
			opts = append(opts, Type(v1.ServiceTypeNodePort), func(s *v1.Service) { s.Spec.Ports[0].NodePort = nodePort })
		case 9:
			opts = append(opts, Type(v1.ServiceTypeLoadBalancer), ETPLocal, HealthCheckNodePort(int32(SyntheticNodePortBase+(n+9)/10*3+i/10)),
				func(s *v1.Service) { s.Spec.Ports[0].NodePort = nodePort },
				Ingress(fmt.Sprintf("203.0.%d.%d", (i>>8)&255, i&255)))
		}
		c.Services = append(c.Services, Service(ns, name, opts...))
		sopts := []SliceOption{SlicePort("http", v1.ProtocolTCP, 8080)}
		for j := range epsPer {
			sopts = append(sopts, Endpoint(EndpointIP(epIndex), OnNode(fmt.Sprintf("node-%d", j%10)), InZone(fmt.Sprintf("zone-%d", j%2))))
			epIndex++
		}
		c.Slices = append(c.Slices, Slice(ns, name+"-abcde", name, discovery.AddressTypeIPv4, sopts...))
	}
	return c
}

// Feed hands the cluster to a sink (a tracker): the Node, then every
// Service and slice.
func (c Cluster) Feed(s Sink) {
	var conv object.Converter // one, as a source has
	s.UpsertNode(c.Node)
	for _, svc := range c.Services {
		s.UpsertService(conv.Service(svc))
	}
	for _, sl := range c.Slices {
		s.UpsertEndpointSlice(conv.EndpointSlice(sl))
	}
}

// File writes the cluster as a --file holds it: the Node, then each
// Service and its slice, as documents marshalled by marshal (YAML or
// JSON) and separated by "---" lines.
func (c Cluster) File(marshal func(any) ([]byte, error)) ([]byte, error) {
	var buf bytes.Buffer
	objs := []any{c.Node}
	for i := range c.Services {
		objs = append(objs, c.Services[i], c.Slices[i])
	}
	for _, o := range objs {
		doc, err := marshal(o)
		if err != nil {
			return nil, err
		}
		buf.WriteString("---\n")
		buf.Write(doc)
		buf.WriteString("\n")
	}
	return buf.Bytes(), nil
}

// Sink is the part of source.Sink Feed needs.
type Sink interface {
	UpsertService(*object.Service)
	UpsertEndpointSlice(*object.EndpointSlice)
	UpsertNode(*v1.Node)
}

// EndpointIP is the k-th synthetic endpoint address (10.64.0.0 onwards).
func EndpointIP(k int) string {
	return fmt.Sprintf("10.%d.%d.%d", 64+(k>>16), (k>>8)&255, k&255)
}

// Large is one Service with perFamily endpoints in each of its families
// (IPv4, and IPv6 too when dualStack), in slices of perSlice endpoints as
// the EndpointSlice controller writes them (at most 1000 each), all on
// node, every tenth one not ready: a Deployment of thousands of
// replicas. opts shape the Service (ClusterIPs are given: 10.96.255.254
// and fd00:96::fffe).
func Large(ns, name, node string, perFamily, perSlice int, dualStack bool, opts ...ServiceOption) (*v1.Service, []*discovery.EndpointSlice) {
	cips := []string{"10.96.255.254"}
	families := []discovery.AddressType{discovery.AddressTypeIPv4}
	if dualStack {
		cips = append(cips, "fd00:96::fffe")
		families = append(families, discovery.AddressTypeIPv6)
	}
	svc := Service(ns, name, append([]ServiceOption{ClusterIPs(cips...), Port("http", v1.ProtocolTCP, 80, 0)}, opts...)...)
	var slices []*discovery.EndpointSlice
	for _, fam := range families {
		for first := 0; first < perFamily; first += perSlice {
			sopts := []SliceOption{SlicePort("http", v1.ProtocolTCP, 8080)}
			for k := first; k < min(first+perSlice, perFamily); k++ {
				eopts := []EndpointOption{OnNode(node)}
				if k%10 == 9 {
					eopts = append(eopts, NotReady)
				}
				sopts = append(sopts, Endpoint(LargeEndpointIP(fam, k), eopts...))
			}
			sname := fmt.Sprintf("%s-%s-%d", name, map[discovery.AddressType]string{discovery.AddressTypeIPv4: "v4", discovery.AddressTypeIPv6: "v6"}[fam], first/perSlice)
			slices = append(slices, Slice(ns, sname, name, fam, sopts...))
		}
	}
	return svc, slices
}

// LargeEndpointIP is the k-th endpoint address of a Large Service's
// family: 10.128.0.0/10 or fd00:128::/64.
func LargeEndpointIP(fam discovery.AddressType, k int) string {
	if fam == discovery.AddressTypeIPv6 {
		return fmt.Sprintf("fd00:128::%x:%x", k>>16, k&0xffff)
	}
	return fmt.Sprintf("10.%d.%d.%d", 128+(k>>16), (k>>8)&255, k&255)
}
