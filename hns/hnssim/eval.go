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

// Packet is what the evaluator is asked about.
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
	Balanced bool           // a load balancer took it
	Backend  netip.AddrPort // where it goes (endpoint IP, internal port)
	// DstSeen is the destination the backend sees: the VIP when the
	// balancer preserves it (PreserveDIP), else the backend's own IP.
	DstSeen netip.Addr
	DSR     bool   // the backend answers the client directly
	Reason  string // why it was not balanced, or which balancer took it
}

// Evaluate decides which backend a packet reaches. The rules it models:
//   - a load balancer takes a packet when a port mapping has its protocol
//     and destination port, and a frontend VIP equals its destination; a
//     balancer without VIPs (NodePort) takes packets to any host address,
//     from pods only with LocalRoutedVIP, never from the host itself
//     (Windows has no NodePort access from the node), and only of its
//     own family (the IPv6 flag);
//   - ILB port mappings serve only this host's pods and the host;
//   - SourceIP distribution keeps a client on one backend; otherwise each
//     connection is spread on its own;
//   - a remote backend on an overlay network without a provider address
//     cannot be reached.
//
// A packet no balancer takes is reported unbalanced: HNS would route it
// like any other packet, which for a VIP means it goes nowhere useful.
func (s *Sim) Evaluate(p Packet) Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.lbs))
	for id := range s.lbs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		lb := s.lbs[id]
		pm, ok := s.mapping(lb, p)
		if !ok {
			continue
		}
		if len(lb.HostComputeEndpoints) == 0 {
			return Verdict{Reason: "load balancer " + id + " has no backends"}
		}
		i := pick(p, pm, len(lb.HostComputeEndpoints))
		ep := s.endpoints[lb.HostComputeEndpoints[i]]
		if ep == nil {
			return Verdict{Reason: "backend endpoint gone"}
		}
		if ep.Flags&hns.EndpointFlagRemote != 0 {
			if net := s.networkByID(ep.HostComputeNetwork); net != nil && net.IsOverlay() && providerAddress(ep) == "" {
				return Verdict{Reason: "remote backend without a provider address on an overlay network"}
			}
		}
		ip, err := netip.ParseAddr(epIP(ep))
		if err != nil {
			return Verdict{Reason: "backend without an IP"}
		}
		v := Verdict{Balanced: true, Backend: netip.AddrPortFrom(ip, pm.InternalPort), DstSeen: ip,
			DSR: lb.Flags&hns.LBFlagDSR != 0, Reason: "load balancer " + id}
		if pm.Flags&hns.PortFlagPreserveDIP != 0 {
			v.DstSeen = p.Dst.Addr()
		}
		return v
	}
	return Verdict{Reason: fmt.Sprintf("no load balancer for %s/%d", p.Dst, p.Protocol)}
}

// mapping returns the port mapping of lb that takes p, if any.
func (s *Sim) mapping(lb *hns.LoadBalancer, p Packet) (hns.PortMapping, bool) {
	for _, pm := range lb.PortMappings {
		if pm.Protocol != p.Protocol || pm.ExternalPort != p.Dst.Port() {
			continue
		}
		if pm.Flags&hns.PortFlagILB != 0 && p.From == FromExternal {
			continue
		}
		if len(lb.FrontendVIPs) == 0 {
			// A balancer without VIPs serves the host addresses of its own
			// family: the IPv6 flag says which.
			if (lb.Flags&hns.LBFlagIPv6 != 0) != p.Dst.Addr().Is6() {
				continue
			}
			if !slices.Contains(s.hostIPs, p.Dst.Addr()) || p.From == FromNode {
				continue
			}
			if p.From == FromPod && pm.Flags&hns.PortFlagLocalRoutedVIP == 0 {
				continue
			}
			return pm, true
		}
		if slices.Contains(lb.FrontendVIPs, p.Dst.Addr().String()) {
			return pm, true
		}
	}
	return hns.PortMapping{}, false
}

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
