package hns

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// This file is the one place the graph becomes HNS objects. It is pure:
// given a service port, the node's view and what HNS supports, it says
// which load balancers should exist and which endpoints (by IP) they use.
//
// Per service port and IP family, as upstream winkernel builds them:
//
//	ClusterIP    VIP = ClusterIP, port = service port; DSR flag with
//	             --hns-enable-dsr; internal endpoints (ITP=Local: local ones)
//	NodePort     no VIP, port = node port, VipExternalIP + LocalRoutedVIP
//	ExternalIP   VIP = external IP, VipExternalIP
//	LB ingress   VIP = ingress IP, VipExternalIP (+ PreserveDIP + UseMux with
//	             the preserve-destination annotation)
//
// External frontends use the external endpoints; with
// externalTrafficPolicy=Local (and DSR support) they are DSR load
// balancers with local endpoints only ("localTrafficDSR"); with
// preserve-destination the NodePort and ingress ones use local endpoints
// only. ClientIP affinity is SourceIP distribution (HNS has no timeout).
// IPv6 load balancers carry the IPv6 flag.

// AnnotationPreserveDestination is upstream's annotation for PreserveDIP.
const AnnotationPreserveDestination = "preserve-destination"

// MaxBackends is how many endpoints one HNS load balancer takes.
const MaxBackends = 64

// Kind is what a load balancer serves.
type Kind string

// The kinds of load balancers.
const (
	KindClusterIP  Kind = "ClusterIP"
	KindNodePort   Kind = "NodePort"
	KindExternalIP Kind = "ExternalIP"
	KindIngress    Kind = "Ingress"
)

// Settings are what the mapping needs to know besides the graph.
type Settings struct {
	Features  Features
	EnableDSR bool       // --hns-enable-dsr (ClusterIP DSR)
	SourceVIP netip.Addr // --hns-source-vip (overlay); else the node IP
	NodeIPs   []netip.Addr
}

// DesiredLB is a load balancer the driver wants, before endpoints are
// turned into HNS endpoint IDs.
type DesiredLB struct {
	Key       string // identity: family, kind, VIP, protocol, port
	Kind      Kind
	Service   graph.ServicePortName
	VIP       netip.Addr // invalid for NodePort
	SourceVIP string
	Protocol  uint32
	Port      uint16 // external
	Target    uint16 // internal
	Flags     uint32
	PortFlags uint32
	Dist      uint32
	Endpoints []graph.Endpoint
}

// LoadBalancer is the HNS object for this load balancer once its
// endpoints have HNS IDs (in the same order as Endpoints, or fewer).
func (want DesiredLB) LoadBalancer(endpointIDs []string) LoadBalancer {
	lb := LoadBalancer{
		HostComputeEndpoints: endpointIDs,
		SourceVIP:            want.SourceVIP,
		PortMappings: []PortMapping{{Protocol: want.Protocol, InternalPort: want.Target, ExternalPort: want.Port,
			DistributionType: want.Dist, Flags: want.PortFlags}},
		SchemaVersion: V2,
		Flags:         want.Flags,
	}
	if want.VIP.IsValid() {
		lb.FrontendVIPs = []string{want.VIP.String()}
	}
	return lb
}

// Problem is something of a service port HNS cannot do as asked.
type Problem struct {
	Service graph.ServicePortName
	What    string
}

// LoadBalancersFor maps one service port.
func LoadBalancersFor(sp *graph.ServicePort, s Settings) ([]DesiredLB, []Problem) {
	var out []DesiredLB
	var problems []Problem
	report := func(format string, a ...any) {
		problems = append(problems, Problem{Service: sp.Name, What: fmt.Sprintf(format, a...)})
	}
	proto := map[graph.Protocol]uint32{graph.TCP: 6, graph.UDP: 17, graph.SCTP: 132}[sp.Name.Protocol]
	dist := DistributionNone
	if sp.SessionAffinity.ClientIP {
		if s.Features.SessionAffinity {
			dist = DistributionSourceIP
		} else {
			report("ClientIP session affinity needs HNS session affinity (Windows Server 2022): not applied")
		}
	}
	preserve := sp.Annotations[AnnotationPreserveDestination] == "true" && s.Features.DSR
	localDSR := sp.ExternalTrafficPolicy == graph.PolicyLocal && s.Features.DSR
	clusterDSR := s.EnableDSR && s.Features.DSR
	if s.EnableDSR && !s.Features.DSR {
		report("--hns-enable-dsr: this HNS does not support DSR: not applied")
	}

	for _, fam := range sp.Families().List() {
		if fam == graph.IPv6 && !s.Features.IPv6DualStack {
			report("IPv6 needs HNS dual-stack support (Windows Server 2022): IPv6 frontends not programmed")
			continue
		}
		lbFlags := uint32(0)
		if fam == graph.IPv6 {
			lbFlags |= LBFlagIPv6
		}
		srcVIP := ""
		if s.SourceVIP.IsValid() && graph.FamilyOf(s.SourceVIP) == fam {
			srcVIP = s.SourceVIP.String()
		} else if ip, ok := graph.FirstOfFamily(s.NodeIPs, fam); ok {
			srcVIP = ip.String()
		}
		add := func(kind Kind, vip netip.Addr, port uint16, flags, portFlags uint32, eps []graph.Endpoint) {
			eps = graph.EndpointsOfFamily(eps, fam)
			if len(eps) == 0 {
				return // HNS cannot reject: no load balancer (a capability gap the driver declares)
			}
			target, kept, dropped := commonTarget(eps)
			if dropped > 0 {
				report("%s: %d endpoint(s) use another target port than %d (an HNS load balancer has one internal port): left out", kind, dropped, target)
			}
			if len(kept) > MaxBackends {
				report("%s: %d endpoints, HNS takes %d: kept the local ones first, then the rest in order", kind, len(kept), MaxBackends)
				kept = truncate(kept, MaxBackends)
			}
			vipText := ""
			if vip.IsValid() {
				vipText = vip.String()
			}
			out = append(out, DesiredLB{
				Key:  fmt.Sprintf("%s|%s|%s|%d|%d", fam, kind, vipText, proto, port),
				Kind: kind, Service: sp.Name, VIP: vip, SourceVIP: srcVIP, Protocol: proto, Port: port, Target: target,
				Flags: lbFlags | flags, PortFlags: portFlags, Dist: dist, Endpoints: kept,
			})
		}

		if cip, ok := graph.FirstOfFamily(sp.ClusterIPs, fam); ok {
			f := uint32(0)
			if clusterDSR {
				f = LBFlagDSR
			}
			add(KindClusterIP, cip, sp.Port, f, 0, sp.InternalEndpoints)
		}
		extDSR := uint32(0)
		if localDSR {
			extDSR = LBFlagDSR
		}
		external := sp.ExternalEndpoints
		localOnly := onlyLocal(external)
		if sp.NodePort != 0 {
			eps := external
			if preserve {
				eps = localOnly
			}
			add(KindNodePort, netip.Addr{}, sp.NodePort, extDSR, PortFlagVipExternalIP|PortFlagLocalRoutedVIP, eps)
		}
		for _, ip := range sp.ExternalIPs {
			if graph.FamilyOf(ip) == fam {
				add(KindExternalIP, ip, sp.Port, extDSR, PortFlagVipExternalIP, external)
			}
		}
		for _, ip := range sp.LoadBalancerIPs {
			if graph.FamilyOf(ip) != fam {
				continue
			}
			if preserve {
				add(KindIngress, ip, sp.Port, LBFlagDSR, PortFlagVipExternalIP|PortFlagPreserveDIP|PortFlagUseMux, localOnly)
			} else {
				add(KindIngress, ip, sp.Port, extDSR, PortFlagVipExternalIP, external)
			}
		}
	}
	return out, problems
}

func onlyLocal(eps []graph.Endpoint) []graph.Endpoint {
	var out []graph.Endpoint
	for _, e := range eps {
		if e.Local {
			out = append(out, e)
		}
	}
	return out
}

// commonTarget picks the target port most endpoints use (lowest on a tie)
// and splits the endpoints by it.
func commonTarget(eps []graph.Endpoint) (uint16, []graph.Endpoint, int) {
	count := map[uint16]int{}
	for _, e := range eps {
		count[e.Port]++
	}
	var best uint16
	for p, n := range count {
		if n > count[best] || (n == count[best] && p < best) {
			best = p
		}
	}
	var kept []graph.Endpoint
	for _, e := range eps {
		if e.Port == best {
			kept = append(kept, e)
		}
	}
	return best, kept, len(eps) - len(kept)
}

// truncate keeps n endpoints: local ones first, then the rest in the
// graph's order.
func truncate(eps []graph.Endpoint, n int) []graph.Endpoint {
	sorted := slices.Clone(eps)
	slices.SortStableFunc(sorted, func(a, b graph.Endpoint) int {
		switch {
		case a.Local == b.Local:
			return 0
		case a.Local:
			return -1
		}
		return 1
	})
	sorted = sorted[:n]
	graph.SortEndpoints(sorted)
	return sorted
}

// RemoteEndpointName names the remote endpoints this driver creates; the
// prefix is how it recognises its own after a restart.
func RemoteEndpointName(ip netip.Addr) string {
	return RemotePrefix + strings.ReplaceAll(ip.String(), ":", "-")
}

// RemotePrefix starts the name of every remote endpoint the driver owns.
const RemotePrefix = "switchyard-remote-"

// RemoteEndpoint builds the HNS endpoint for a backend on another node:
// on overlay networks with a ProviderAddress policy (the node that holds
// it, from the network's remote subnet routes; this node's IP if none
// matches, as upstream does), with a MAC conjured from the IP.
func RemoteEndpoint(n *Network, ip netip.Addr, nodeIP netip.Addr) *Endpoint {
	ep := &Endpoint{
		Name:             RemoteEndpointName(ip),
		IPConfigurations: []IPConfig{{IPAddress: ip.String()}},
		MacAddress:       conjureMAC(ip),
		Flags:            EndpointFlagRemote,
		SchemaVersion:    V2,
	}
	if n.IsOverlay() {
		pa := providerAddressFor(n, ip)
		if pa == "" && nodeIP.IsValid() {
			pa = nodeIP.String()
		}
		ep.Policies = append(ep.Policies, providerAddressPolicy(pa))
	}
	return ep
}

func providerAddressFor(n *Network, ip netip.Addr) string {
	for _, r := range n.RemoteSubnets {
		if p, err := netip.ParsePrefix(r.DestinationPrefix); err == nil && p.Contains(ip) {
			return r.ProviderAddress
		}
		if r.ProviderAddress == ip.String() {
			return r.ProviderAddress
		}
	}
	return ""
}

// conjureMAC is upstream's "02-11-" + the address's last four bytes.
func conjureMAC(ip netip.Addr) string {
	b := ip.AsSlice()
	b = b[len(b)-4:]
	return fmt.Sprintf("02-11-%02x-%02x-%02x-%02x", b[0], b[1], b[2], b[3])
}
