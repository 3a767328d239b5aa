package testobj

import (
	"fmt"
	"net/netip"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// Cluster is a synthetic cluster for benchmarks and scale tests.
type Cluster struct {
	Services []*v1.Service
	Slices   []*discovery.EndpointSlice
	Node     *v1.Node
}

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
		switch i % 10 {
		case 7, 8:
			opts = append(opts, Type(v1.ServiceTypeNodePort), func(s *v1.Service) { s.Spec.Ports[0].NodePort = int32(30000 + i%2768) })
		case 9:
			opts = append(opts, Type(v1.ServiceTypeLoadBalancer), ETPLocal, HealthCheckNodePort(int32(30000+(i+1)%2768)),
				func(s *v1.Service) { s.Spec.Ports[0].NodePort = int32(30000 + i%2768) },
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
	s.UpsertNode(c.Node)
	for _, svc := range c.Services {
		s.UpsertService(svc)
	}
	for _, sl := range c.Slices {
		s.UpsertEndpointSlice(sl)
	}
}

// Sink is the part of source.Sink Feed needs.
type Sink interface {
	UpsertService(*v1.Service)
	UpsertEndpointSlice(*discovery.EndpointSlice)
	UpsertNode(*v1.Node)
}

// EndpointIP is the k-th synthetic endpoint address (10.64.0.0 onwards).
func EndpointIP(k int) string {
	return fmt.Sprintf("10.%d.%d.%d", 64+(k>>16), (k>>8)&255, k&255)
}
