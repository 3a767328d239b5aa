package engine

import (
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/ovs/hostnet"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
	"github.com/switchyard-proxy/switchyard/ovs/podport"
)

// HostModel is the host's share of the services: the frontend addresses
// the host routes into the bridge whole (ClusterIPs), the ports of the
// external and load-balancer IPs it captures (only those: the addresses'
// other ports are not the Services'), and the ports it DNATs on the
// node's own addresses (NodePorts, and external IPs that are a node
// address). All are reference-counted over service ports, and changes are
// recorded so a commit touches only what changed. A service port's share
// is worked out from the service port and the node's addresses when
// needed, not kept.
type HostModel struct {
	nodeIPs   []netip.Addr // the node addresses the counts were made with
	frontends map[netip.Addr]int
	captures  map[hostnet.Capture]int
	nodePorts map[hostnet.ProtoPort]int

	touched          map[netip.Addr]bool // frontends that came or went
	capturesChanged  bool
	nodePortsChanged bool
}

// hostShare is what one service port asks of the host.
type hostShare struct {
	frontends []netip.Addr
	captures  []hostnet.Capture
	nodePorts []hostnet.ProtoPort
}

func NewHostModel() *HostModel {
	return &HostModel{frontends: map[netip.Addr]int{}, captures: map[hostnet.Capture]int{},
		nodePorts: map[hostnet.ProtoPort]int{}, touched: map[netip.Addr]bool{}}
}

// shareOf is what a service port asks of the host: its ClusterIPs are
// routed into the bridge, its external and load-balancer IPs captured on
// its protocol and port, except those that are this node's addresses,
// whose ports are DNATed like its NodePort.
func shareOf(sp *graph.ServicePort, nodeIPs []netip.Addr) hostShare {
	var s hostShare
	if sp == nil {
		return s
	}
	proto := strings.ToLower(string(sp.Name.Protocol))
	if sp.NodePort != 0 {
		s.nodePorts = append(s.nodePorts, hostnet.ProtoPort{Proto: proto, Port: sp.NodePort})
	}
	for i, ip := range slices.Concat(sp.ClusterIPs, sp.ExternalIPs, sp.LoadBalancerIPs) {
		switch {
		case slices.Contains(nodeIPs, ip):
			pp := hostnet.ProtoPort{Proto: proto, Port: sp.Port}
			if !slices.Contains(s.nodePorts, pp) {
				s.nodePorts = append(s.nodePorts, pp)
			}
		case i < len(sp.ClusterIPs):
			if !slices.Contains(s.frontends, ip) {
				s.frontends = append(s.frontends, ip)
			}
		default:
			cp := hostnet.Capture{IP: ip, Proto: proto, Port: sp.Port}
			if !slices.Contains(s.captures, cp) {
				s.captures = append(s.captures, cp)
			}
		}
	}
	return s
}

// Replace swaps a service port's share (old: what it was, nil when it is
// new; cur: nil when it is gone).
func (h *HostModel) Replace(old, cur *graph.ServicePort) {
	was, is := shareOf(old, h.nodeIPs), shareOf(cur, h.nodeIPs)
	for _, ip := range recount(h.frontends, was.frontends, is.frontends) {
		h.touched[ip] = true
	}
	if len(recount(h.captures, was.captures, is.captures)) > 0 {
		h.capturesChanged = true
	}
	if len(recount(h.nodePorts, was.nodePorts, is.nodePorts)) > 0 {
		h.nodePortsChanged = true
	}
}

// recount moves one reference of counts from each of was to each of is,
// and returns the keys that came (first reference) or went (last one).
func recount[K comparable](counts map[K]int, was, is []K) []K {
	var changed []K
	for _, k := range is {
		if counts[k]++; counts[k] == 1 {
			changed = append(changed, k)
		}
	}
	for _, k := range was {
		if counts[k]--; counts[k] == 0 {
			delete(counts, k)
			changed = append(changed, k)
		}
	}
	return changed
}

// SetNodeIPs recounts every service port's share with the node's new
// addresses.
func (h *HostModel) SetNodeIPs(ips []netip.Addr, sps map[graph.ServicePortName]*graph.ServicePort) {
	for _, sp := range sps {
		h.Replace(sp, nil)
	}
	h.nodeIPs = slices.Clone(ips)
	for _, sp := range sps {
		h.Replace(nil, sp)
	}
}

// FrontendList lists the frontends the host routes (keep filters),
// sorted.
func (h *HostModel) FrontendList(keep func(netip.Addr) bool) []netip.Addr {
	out := h.frontendsKept(keep, &Pause{}, make([]netip.Addr, 0, len(h.frontends)))
	sortFrontends(out)
	return out
}

// CaptureList lists the captured ports (keep filters their addresses),
// sorted.
func (h *HostModel) CaptureList(keep func(netip.Addr) bool) []hostnet.Capture {
	out := h.capturesKept(keep, &Pause{}, make([]hostnet.Capture, 0, len(h.captures)))
	sortCaptures(out)
	return out
}

// NodePortList lists the ports the host DNATs, sorted.
func (h *HostModel) NodePortList() []hostnet.ProtoPort {
	out := slices.Collect(maps.Keys(h.nodePorts))
	sortNodePorts(out)
	return out
}

// HostSide is a copy of the model's host side: what a host sync brings
// the host to.
type HostSide struct {
	Frontends []netip.Addr
	Captures  []hostnet.Capture
	NodePorts []hostnet.ProtoPort
}

// HostSizes is how many frontends, captured ports and NodePorts a host
// side holds.
type HostSizes struct{ Frontends, Captures, NodePorts int }

// Sizes is the host side's sizes.
func (h *HostModel) Sizes() HostSizes {
	return HostSizes{len(h.frontends), len(h.captures), len(h.nodePorts)}
}

// ReservedSide is an empty host side with room for n and a little more:
// made without the lock, so that Side appends to it without allocating
// under the lock (see AuditView.Reserve). It reuses spare's arrays
// (an earlier audit's, no longer used) where they have the room: an
// audit of 100k Services otherwise made ~3 MB of garbage (docs/scale.md).
func ReservedSide(n HostSizes, spare HostSide) HostSide {
	return HostSide{Frontends: emptyWithRoom(spare.Frontends, roomFor(n.Frontends)),
		Captures: emptyWithRoom(spare.Captures, roomFor(n.Captures)), NodePorts: emptyWithRoom(spare.NodePorts, roomFor(n.NodePorts))}
}

// emptyWithRoom is s emptied when it has room for n, else a new slice
// with that room.
func emptyWithRoom[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:0]
	}
	return make([]T, 0, n)
}

// Side appends the host side (keep filters the frontends and the captured
// ports' addresses) to into, in no order, with the driver's lock held,
// pausing (p) between slices: the model may change during a pause, so the
// copy is the host side as it was when it began only if no host call was
// made since (the driver's host generation says). Sort it before a host
// sync.
func (h *HostModel) Side(keep func(netip.Addr) bool, p *Pause, into HostSide) HostSide {
	into.Frontends = h.frontendsKept(keep, p, into.Frontends)
	into.Captures = h.capturesKept(keep, p, into.Captures)
	for pp := range h.nodePorts {
		into.NodePorts = append(into.NodePorts, pp)
		p.Step()
	}
	return into
}

// Sort sorts each list, as the ...List methods return them.
func (s HostSide) Sort() {
	sortFrontends(s.Frontends)
	sortCaptures(s.Captures)
	sortNodePorts(s.NodePorts)
}

func (h *HostModel) frontendsKept(keep func(netip.Addr) bool, p *Pause, out []netip.Addr) []netip.Addr {
	for ip := range h.frontends {
		if keep(ip) {
			out = append(out, ip)
		}
		p.Step()
	}
	return out
}

func (h *HostModel) capturesKept(keep func(netip.Addr) bool, p *Pause, out []hostnet.Capture) []hostnet.Capture {
	for cp := range h.captures {
		if keep(cp.IP) {
			out = append(out, cp)
		}
		p.Step()
	}
	return out
}

func sortFrontends(s []netip.Addr) { slices.SortFunc(s, netip.Addr.Compare) }

func sortCaptures(s []hostnet.Capture) {
	slices.SortFunc(s, func(a, b hostnet.Capture) int {
		if c := a.IP.Compare(b.IP); c != 0 {
			return c
		}
		if c := strings.Compare(a.Proto, b.Proto); c != 0 {
			return c
		}
		return int(a.Port) - int(b.Port)
	})
}

func sortNodePorts(s []hostnet.ProtoPort) {
	slices.SortFunc(s, func(a, b hostnet.ProtoPort) int {
		if c := strings.Compare(a.Proto, b.Proto); c != 0 {
			return c
		}
		return int(a.Port) - int(b.Port)
	})
}

// Pending is what changed since the last commit: frontends to add (true)
// or remove (false), and the captured ports and the NodePorts if they
// changed (else nil).
func (h *HostModel) Pending(keep func(netip.Addr) bool) (map[netip.Addr]bool, []hostnet.Capture, []hostnet.ProtoPort) {
	changes := make(map[netip.Addr]bool, len(h.touched))
	for ip := range h.touched {
		changes[ip] = h.frontends[ip] > 0 && keep(ip)
	}
	var caps []hostnet.Capture
	if h.capturesChanged {
		caps = h.CaptureList(keep)
	}
	var np []hostnet.ProtoPort
	if h.nodePortsChanged {
		np = h.NodePortList()
	}
	return changes, caps, np
}

// HasPending reports whether anything changed since the last commit.
func (h *HostModel) HasPending() bool {
	return len(h.touched) > 0 || h.capturesChanged || h.nodePortsChanged
}

// Committed records that the pending changes are on the host.
func (h *HostModel) Committed() {
	h.touched = map[netip.Addr]bool{}
	h.capturesChanged, h.nodePortsChanged = false, false
}

// HostConfig is the host's side of the node's pod network.
func (m *Model) HostConfig(gateway string) hostnet.Config {
	c := hostnet.Config{Gateway: gateway, PodPortPrefix: podport.HostVethPrefix, NodeIPs: m.cfg.NodeIPs, PodCIDRs: m.cfg.PodCIDRs}
	var fams graph.FamilySet
	for _, p := range m.cfg.PodCIDRs {
		c.Addresses = append(c.Addresses, netip.PrefixFrom(pipeline.GatewayOf(p), p.Bits()))
		fams = fams.With(graph.FamilyOf(p.Addr()))
	}
	for _, ip := range m.cfg.VirtualIPs {
		if fams.Has(graph.FamilyOf(ip)) {
			c.VirtualIPs = append(c.VirtualIPs, ip)
		}
	}
	for _, ip := range m.cfg.NodePortIPs {
		if fams.Has(graph.FamilyOf(ip)) {
			c.NodePortIPs = append(c.NodePortIPs, ip)
		}
	}
	for _, p := range m.cfg.ServiceCIDRs {
		if fams.Has(graph.FamilyOf(p.Addr())) {
			c.ServiceCIDRs = append(c.ServiceCIDRs, p)
		}
	}
	c.ClusterPodCIDRs = slices.Clone(m.cfg.PodCIDRs)
	for _, p := range m.peers.Sorted() {
		c.ClusterPodCIDRs = append(c.ClusterPodCIDRs, p.PodCIDRs...)
		for _, cidr := range p.PodCIDRs {
			fam := graph.FamilyOf(cidr.Addr())
			if m.overlay {
				// Into the bridge, which tunnels it.
				if vip, ok := graph.FirstOfFamily(c.VirtualIPs, fam); ok {
					c.PeerRoutes = append(c.PeerRoutes, hostnet.Route{Dst: cidr, Via: vip, ViaGateway: true})
				}
			} else if ip, ok := graph.FirstOfFamily(p.IPs, fam); ok {
				// To the node itself (its pods' traffic leaves the bridge
				// through the host as well).
				c.PeerRoutes = append(c.PeerRoutes, hostnet.Route{Dst: cidr, Via: ip})
			}
		}
	}
	return c
}

// RoutesFrontend says whether the host routes a frontend into the bridge:
// not an address of another node (that would take the host's own traffic
// to that node), nor of this node's pods. It costs the same whatever the
// number of nodes: it is asked for every frontend.
func (m *Model) RoutesFrontend(ip netip.Addr) bool {
	if m.peerIPs[ip] > 0 {
		return false
	}
	for _, p := range m.cfg.PodCIDRs {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}
