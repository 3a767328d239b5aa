package hnssim

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"

	"github.com/switchyard-proxy/switchyard/hns"
)

// SourceKind is where a packet comes from.
type SourceKind int

// Sources the evaluator knows.
const (
	FromPod      SourceKind = iota // a container on this host
	FromNode                       // the host itself
	FromExternal                   // another machine
)

// Packet is the first packet of a connection the evaluator is asked about.
type Packet struct {
	From     SourceKind
	Src      netip.Addr
	Dst      netip.AddrPort
	Protocol uint32 // 6, 17, 132
	// Conn tells connections of one client apart (another source port);
	// load balancers without affinity spread by it.
	Conn uint64
}

// Verdict is what HNS does with the packet, as this model sees it.
type Verdict struct {
	// Balanced: a load balancer took it (Reason names which). A packet no
	// load balancer takes is routed as ordinary traffic.
	Balanced bool
	// Connected: the packet reaches Backend and the reply reaches the
	// client. False: it goes nowhere, or its reply is lost (Reason says
	// why).
	Connected bool
	// Backend is where the packet goes (endpoint IP and internal port; for
	// routed traffic, the destination unchanged).
	Backend netip.AddrPort
	// ToHost: routed to the host's own network stack (Backend is one of
	// the host's addresses), not to a container.
	ToHost bool
	// SrcSeen is the source the backend sees: the client's address, or the
	// load balancer's SourceVIP when HNS SNATs (rules.go, rule S).
	SrcSeen netip.Addr
	// DstSeen is the destination the backend sees: the VIP when the
	// balancer preserves it (PreserveDIP), else the backend's own address.
	DstSeen netip.Addr
	// DSR: the backend answers the client directly, not through the load
	// balancer.
	DSR    bool
	Reason string
}

// Evaluate decides what becomes of the first packet of a connection: the
// load balancer that takes it and the backend it picks, or where HNS
// routes it when no load balancer takes it, with the source and
// destination the backend sees. Each rule it applies is listed, with its
// source or "assumed", in rules.go.
func (s *Sim) Evaluate(p Packet) Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, lb, pm, ok := s.balancer(p)
	if !ok {
		return s.route(p)
	}
	if len(lb.HostComputeEndpoints) == 0 {
		return Verdict{Balanced: true, Reason: "load balancer " + id + " has no backends"}
	}
	return s.deliver(p, id, lb, pm, pick(p, pm, len(lb.HostComputeEndpoints)))
}

// balancer finds the load balancer and port mapping that take p.
func (s *Sim) balancer(p Packet) (string, *hns.LoadBalancer, hns.PortMapping, bool) {
	ids := make([]string, 0, len(s.lbs))
	for id := range s.lbs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		lb := s.lbs[id]
		if pm, ok := s.mapping(lb, p); ok {
			return id, lb, pm, true
		}
	}
	return "", nil, hns.PortMapping{}, false
}

// mapping returns the port mapping of lb that takes p, if any (rules F).
func (s *Sim) mapping(lb *hns.LoadBalancer, p Packet) (hns.PortMapping, bool) {
	dst := p.Dst.Addr()
	toHost := slices.Contains(s.hostIPs, dst)
	for _, pm := range lb.PortMappings {
		if pm.Protocol != p.Protocol || pm.ExternalPort != p.Dst.Port() {
			continue
		}
		if pm.Flags&hns.PortFlagILB != 0 && p.From == FromExternal {
			continue // F2
		}
		if p.From == FromNode && toHost && pm.Flags&hns.PortFlagLocalRoutedVIP == 0 {
			continue // F3: the host's own address stays in its stack
		}
		if len(lb.FrontendVIPs) == 0 {
			// F4: a balancer without VIPs serves the host's addresses of
			// its own family (the IPv6 flag says which).
			if (lb.Flags&hns.LBFlagIPv6 != 0) == dst.Is6() && toHost {
				return pm, true
			}
			continue
		}
		if slices.Contains(lb.FrontendVIPs, dst.String()) {
			return pm, true // F1
		}
	}
	return hns.PortMapping{}, false
}

// deliver sends p to the i-th backend of lb.
func (s *Sim) deliver(p Packet, id string, lb *hns.LoadBalancer, pm hns.PortMapping, i int) Verdict {
	v := Verdict{Balanced: true, DSR: lb.Flags&hns.LBFlagDSR != 0, Reason: "load balancer " + id}
	ep := s.endpoints[lb.HostComputeEndpoints[i]]
	if ep == nil {
		v.Reason += ": backend endpoint gone"
		return v
	}
	ip, err := netip.ParseAddr(ep.IP())
	if err != nil {
		v.Reason += ": backend without an IP"
		return v
	}
	v.Backend = netip.AddrPortFrom(ip, pm.InternalPort)
	v.SrcSeen = s.sourceSeen(p, lb, v.DSR)
	v.DstSeen = ip
	if pm.Flags&hns.PortFlagPreserveDIP != 0 {
		v.DstSeen = p.Dst.Addr() // D1
	}
	remote := ep.Flags&hns.EndpointFlagRemote != 0
	if remote {
		if why := s.providerAddressWrong(ep, ip); why != "" {
			v.Reason += ": " + why // P1, P2
			return v
		}
	}
	if v.DSR && remote && p.From == FromExternal {
		// R1
		v.Reason += fmt.Sprintf(": DSR to %s on another node: its reply leaves that node without the VIP's fix-up and never reaches the client", ip)
		return v
	}
	v.Connected = true
	return v
}

// pick chooses a backend: by the client's address with SourceIP
// distribution (B1), else by connection.
func pick(p Packet, pm hns.PortMapping, n int) int {
	h := fnv.New64a()
	h.Write(p.Src.AsSlice())
	switch pm.DistributionType {
	case hns.DistributionSourceIP:
	case hns.DistributionSourceIPProtocol:
		h.Write([]byte{byte(p.Protocol)})
	default:
		var b [8]byte
		for i := range b {
			b[i] = byte(p.Conn >> (8 * i))
		}
		h.Write(b[:])
	}
	return int(h.Sum64() % uint64(n))
}

func (s *Sim) networkByID(id string) *hns.Network {
	for _, n := range s.networks {
		if n.ID == id {
			return n
		}
	}
	return nil
}
