package hns

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// This file and mappingendpoints.go are the one place the graph becomes
// HNS objects. They are pure:
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
	b := newLBBuilder(sp, s)
	for _, fam := range sp.Families().List() {
		if b.serves(fam) {
			b.clusterIP(fam)
			b.nodePort(fam)
			b.externalIPs(fam)
			b.ingress(fam)
		}
	}
	return b.out, b.problems
}

// lbBuilder builds one service port's load balancers, one frontend kind
// per method, as upstream winkernel does.
type lbBuilder struct {
	sp        *graph.ServicePort
	s         Settings
	proto     uint32
	dist      uint32
	preserve  bool   // PreserveDIP on ingress (the annotation, with DSR)
	extDSR    uint32 // LBFlagDSR on external frontends of a Local policy
	clusterFl uint32 // LBFlagDSR on the ClusterIP with --hns-enable-dsr
	localOnly graph.EndpointList
	out       []DesiredLB
	problems  []string
}

func newLBBuilder(sp *graph.ServicePort, s Settings) *lbBuilder {
	b := &lbBuilder{sp: sp, s: s, dist: DistributionNone, localOnly: onlyLocal(sp.ExternalEndpoints),
		proto: map[graph.Protocol]uint32{graph.TCP: 6, graph.UDP: 17, graph.SCTP: 132}[sp.Name.Protocol]}
	if sp.SessionAffinity.ClientIP {
		if s.Features.SessionAffinity {
			b.dist = DistributionSourceIP
		} else {
			b.report("ClientIP session affinity needs HNS session affinity (Windows Server 2022): not applied")
		}
	}
	b.preserve = sp.Annotations[AnnotationPreserveDestination] == "true" && s.Features.DSR
	if sp.ExternalTrafficPolicy == graph.PolicyLocal && s.Features.DSR {
		b.extDSR = LBFlagDSR
	}
	if s.EnableDSR && s.Features.DSR {
		b.clusterFl = LBFlagDSR
	}
	if s.EnableDSR && !s.Features.DSR {
		b.report("--hns-enable-dsr: this HNS does not support DSR: not applied")
	}
	return b
}

func (b *lbBuilder) report(format string, a ...any) {
	b.problems = append(b.problems, fmt.Sprintf(format, a...))
}

// serves reports whether fam's frontends can be programmed, saying why
// not.
func (b *lbBuilder) serves(fam graph.IPFamily) bool {
	if b.s.Overlay && fam != b.s.primaryFamily() {
		b.report("%s frontends not programmed: HNS overlay networks have no dual-stack (upstream winkernel serves the node's primary family only)", fam)
		return false
	}
	if fam == graph.IPv6 && !b.s.Features.IPv6DualStack {
		b.report("IPv6 needs HNS dual-stack support (Windows Server 2022): IPv6 frontends not programmed")
		return false
	}
	return true
}

func (b *lbBuilder) clusterIP(fam graph.IPFamily) {
	if cip, ok := graph.FirstOfFamily(b.sp.ClusterIPs, fam); ok {
		b.add(fam, KindClusterIP, cip, b.sp.Port, b.clusterFl, 0, b.sp.InternalEndpoints)
	}
}

// nodePort: with PreserveDIP only the local endpoints.
func (b *lbBuilder) nodePort(fam graph.IPFamily) {
	if b.sp.NodePort == 0 {
		return
	}
	eps := b.sp.ExternalEndpoints
	if b.preserve {
		eps = b.localOnly
	}
	b.add(fam, KindNodePort, netip.Addr{}, b.sp.NodePort, b.extDSR, PortFlagVipExternalIP|PortFlagLocalRoutedVIP, eps)
}

func (b *lbBuilder) externalIPs(fam graph.IPFamily) {
	for _, ip := range b.sp.ExternalIPs {
		if graph.FamilyOf(ip) == fam {
			b.add(fam, KindExternalIP, ip, b.sp.Port, b.extDSR, PortFlagVipExternalIP, b.sp.ExternalEndpoints)
		}
	}
}

// ingress: the load balancer IPs; with PreserveDIP, DSR to the local
// endpoints through the mux.
func (b *lbBuilder) ingress(fam graph.IPFamily) {
	for _, ip := range b.sp.LoadBalancerIPs {
		switch {
		case graph.FamilyOf(ip) != fam:
		case b.preserve:
			b.add(fam, KindIngress, ip, b.sp.Port, LBFlagDSR, PortFlagVipExternalIP|PortFlagPreserveDIP|PortFlagUseMux, b.localOnly)
		default:
			b.add(fam, KindIngress, ip, b.sp.Port, b.extDSR, PortFlagVipExternalIP, b.sp.ExternalEndpoints)
		}
	}
}

// add wants a load balancer for fam's endpoints of list, unless there are
// none: HNS cannot reject, so no load balancer (a capability gap the
// driver declares).
func (b *lbBuilder) add(fam graph.IPFamily, kind Kind, vip netip.Addr, port uint16, flags, portFlags uint32, list graph.EndpointList) {
	eps := list.OfFamily(fam).Slice() // a load balancer is written whole: its own copy
	if len(eps) == 0 {
		return
	}
	target, kept, dropped := commonTarget(eps)
	if dropped > 0 {
		b.report("%s: %d endpoint(s) use another target port than %d (an HNS load balancer has one internal port): left out", kind, dropped, target)
	}
	vipText := ""
	if vip.IsValid() {
		vipText = vip.String()
	}
	lbFlags := uint32(0)
	if fam == graph.IPv6 {
		lbFlags = LBFlagIPv6
	}
	b.out = append(b.out, DesiredLB{
		Key:  fmt.Sprintf("%s|%s|%s|%d|%d", fam, kind, vipText, b.proto, port),
		Kind: kind, Service: b.sp.Name, VIP: vip, SourceVIP: b.s.sourceVIP(b.sp, fam), Protocol: b.proto, Port: port, Target: target,
		Flags: lbFlags | flags, PortFlags: portFlags, Dist: b.dist, Endpoints: kept,
	})
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
