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
//
// On overlay networks, as upstream: only the node's primary family (HNS
// overlay networks have no dual-stack: winkernel's dualStackCompatible);
// each ClusterIP also gets a remote endpoint of its own (VIPEndpoint); and
// a service port's SourceVIP is --hns-source-vip unless one of its
// backends on another node is a node's own address or outside every pod
// subnet, when it is the node IP (winkernel's syncProxyRules: "Endpoints
// are any IP's outside the cluster ==> Choose NodeIP as the SourceVIP").

// AnnotationPreserveDestination is upstream's annotation for PreserveDIP.
const AnnotationPreserveDestination = "preserve-destination"

// MaxBackends is how many endpoints an HNS load balancer took in a 2021
// report (kubernetes#98680). The driver passes every endpoint and
// truncates to this only after HNS refused a larger load balancer.
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
	// Overlay is set on an overlay (VXLAN) network, whose RemoteSubnets
	// route other nodes' pod prefixes to those nodes.
	Overlay       bool
	RemoteSubnets []RemoteSubnet
}

// primaryFamily is the family of the node's first address (overlay
// networks serve only it).
func (s Settings) primaryFamily() graph.IPFamily {
	if len(s.NodeIPs) > 0 {
		return graph.FamilyOf(s.NodeIPs[0])
	}
	if s.SourceVIP.IsValid() {
		return graph.FamilyOf(s.SourceVIP)
	}
	return graph.IPv4
}

// sourceVIP is the SourceVIP of a service port's load balancers of one
// family: the node IP on l2bridge (unless --hns-source-vip is set); on
// overlay --hns-source-vip, except when a backend on another node is a
// node's address (its IP is a remote subnet's provider address) or in no
// remote subnet at all ("public"): then the node IP, as upstream.
func (s Settings) sourceVIP(sp *graph.ServicePort, fam graph.IPFamily) string {
	nodeIP, hasNodeIP := graph.FirstOfFamily(s.NodeIPs, fam)
	configured := s.SourceVIP.IsValid() && graph.FamilyOf(s.SourceVIP) == fam
	useNodeIP := !configured
	if s.Overlay && configured {
		for _, list := range []graph.EndpointList{sp.InternalEndpoints, sp.ExternalEndpoints} {
			for e := range list.All() {
				if e.Local || graph.FamilyOf(e.IP) != fam {
					continue
				}
				if pa := ProviderAddressFor(s.RemoteSubnets, e.IP); pa == "" || pa == e.IP.String() {
					useNodeIP = true
				}
			}
		}
	}
	switch {
	case useNodeIP && hasNodeIP:
		return nodeIP.String()
	case configured:
		return s.SourceVIP.String()
	}
	return ""
}

// VIPEndpointsFor lists the ClusterIPs of a service port that need a
// remote endpoint of their own: on overlay networks, the ClusterIP of the
// primary family, pointing at this host (upstream creates it for every
// service port, with or without backends, and skips the service port when
// it cannot).
func VIPEndpointsFor(sp *graph.ServicePort, s Settings) []netip.Addr {
	if !s.Overlay {
		return nil
	}
	if cip, ok := graph.FirstOfFamily(sp.ClusterIPs, s.primaryFamily()); ok {
		return []netip.Addr{cip}
	}
	return nil
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

// LoadBalancersFor maps one service port, and says what of it HNS cannot
// do as asked (one sentence each).
func LoadBalancersFor(sp *graph.ServicePort, s Settings) ([]DesiredLB, []string) {
	var out []DesiredLB
	var problems []string
	report := func(format string, a ...any) {
		problems = append(problems, fmt.Sprintf(format, a...))
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
		if s.Overlay && fam != s.primaryFamily() {
			report("%s frontends not programmed: HNS overlay networks have no dual-stack (upstream winkernel serves the node's primary family only)", fam)
			continue
		}
		if fam == graph.IPv6 && !s.Features.IPv6DualStack {
			report("IPv6 needs HNS dual-stack support (Windows Server 2022): IPv6 frontends not programmed")
			continue
		}
		lbFlags := uint32(0)
		if fam == graph.IPv6 {
			lbFlags |= LBFlagIPv6
		}
		srcVIP := s.sourceVIP(sp, fam)
		add := func(kind Kind, vip netip.Addr, port uint16, flags, portFlags uint32, list graph.EndpointList) {
			eps := list.OfFamily(fam).Slice() // a load balancer is written whole: its own copy
			if len(eps) == 0 {
				return // HNS cannot reject: no load balancer (a capability gap the driver declares)
			}
			target, kept, dropped := commonTarget(eps)
			if dropped > 0 {
				report("%s: %d endpoint(s) use another target port than %d (an HNS load balancer has one internal port): left out", kind, dropped, target)
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

func onlyLocal(eps graph.EndpointList) graph.EndpointList {
	var out []graph.Endpoint
	for e := range eps.All() {
		if e.Local {
			out = append(out, e)
		}
	}
	return graph.EndpointListOf(out...)
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

// Truncated is want with at most n endpoints: local ones first, then the
// rest in the graph's order (what the driver programs after HNS refused
// the whole list).
func (want DesiredLB) Truncated(n int) DesiredLB {
	if len(want.Endpoints) <= n {
		return want
	}
	sorted := slices.Clone(want.Endpoints)
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
	want.Endpoints = sorted
	return want
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
		ep.Policies = append(ep.Policies, providerAddressPolicy(ExpectedProviderAddress(n.RemoteSubnets, ip, nodeIP)))
	}
	return ep
}

// ExpectedProviderAddress is the provider address a remote endpoint for
// ip should carry: the remote subnet's that holds it, else this node's IP
// (upstream: "Could not find provider address, assuming it is a public
// IP").
func ExpectedProviderAddress(subnets []RemoteSubnet, ip, nodeIP netip.Addr) string {
	if pa := ProviderAddressFor(subnets, ip); pa != "" {
		return pa
	}
	if nodeIP.IsValid() {
		return nodeIP.String()
	}
	return ""
}

// VIPEndpointPrefix starts the name of the ClusterIP endpoints the driver
// creates on overlay networks.
const VIPEndpointPrefix = "switchyard-vip-"

// VIPEndpoint builds the remote endpoint upstream creates for a ClusterIP
// on an overlay network: the ClusterIP at this host (its MAC, and this
// node's IP as provider address).
func VIPEndpoint(vip netip.Addr, hostMAC string, nodeIP netip.Addr) *Endpoint {
	return &Endpoint{
		Name:             VIPEndpointPrefix + strings.ReplaceAll(vip.String(), ":", "-"),
		IPConfigurations: []IPConfig{{IPAddress: vip.String()}},
		MacAddress:       hostMAC,
		Flags:            EndpointFlagRemote,
		Policies:         []EndpointPolicy{providerAddressPolicy(nodeIP.String())},
		SchemaVersion:    V2,
	}
}

// SourceVIPEndpointName names the source VIP's endpoint when the driver
// creates it.
const SourceVIPEndpointName = "switchyard-source-vip"

// SourceVIPEndpoint builds the endpoint upstream creates for the source
// VIP on an overlay network when none exists: a local endpoint (no remote
// flag, so no provider address) with the host's MAC.
func SourceVIPEndpoint(ip netip.Addr, hostMAC string) *Endpoint {
	return &Endpoint{
		Name:             SourceVIPEndpointName,
		IPConfigurations: []IPConfig{{IPAddress: ip.String()}},
		MacAddress:       hostMAC,
		SchemaVersion:    V2,
	}
}

// ProviderAddressFor is the provider address of the remote subnet that
// holds ip, or of the node whose address ip is ("" if none: upstream's
// findRemoteSubnetProviderAddress).
func ProviderAddressFor(subnets []RemoteSubnet, ip netip.Addr) string {
	pa := ""
	for _, r := range subnets {
		if p, err := netip.ParsePrefix(r.DestinationPrefix); err == nil && p.Contains(ip) {
			pa = r.ProviderAddress
		}
		if r.ProviderAddress == ip.String() {
			pa = r.ProviderAddress
		}
	}
	return pa
}

// conjureMAC is upstream's "02-11-" + the address's last four bytes.
func conjureMAC(ip netip.Addr) string {
	b := ip.AsSlice()
	b = b[len(b)-4:]
	return fmt.Sprintf("02-11-%02x-%02x-%02x-%02x", b[0], b[1], b[2], b[3])
}
