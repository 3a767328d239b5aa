package conformance

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/switchyard-proxy/switchyard/core/testobj"
	v1 "k8s.io/api/core/v1"
)

// The test world every harness builds. Addresses are fixed so cases can
// name them; harnesses must give each member exactly these addresses.
//
//	node-1 (this node, zone-a): 192.168.100.10, fd00:100::10; pods 10.244.1.0/24, fd00:244:1::/64
//	  pods p1, p2, p3 (backends) and c (the client pod); the node itself serves too
//	node-2 (another node, zone-b): 192.168.100.11, fd00:100::11; pods 10.244.2.0/24, fd00:244:2::/64
//	  remote backends r1, r2 (IPv4 only)
//	external: a client outside the cluster, 198.51.100.5 / 2001:db8:51::5 (it serves too)
//	outside: a second external client, 198.51.99.5 (for source ranges)
var World = world{
	NodeName:     "node-1",
	NodeZone:     "zone-a",
	NodeIPs:      []netip.Addr{addr("192.168.100.10"), addr("fd00:100::10")},
	NodePodCIDRs: []netip.Prefix{prefix("10.244.1.0/24"), prefix("fd00:244:1::/64")},
	Peer: Peer{Name: "node-2", Zone: "zone-b", IPs: []netip.Addr{addr("192.168.100.11"), addr("fd00:100::11")},
		PodCIDRs: []netip.Prefix{prefix("10.244.2.0/24"), prefix("fd00:244:2::/64")}},
	Members: []Member{
		{Name: "node-1", Kind: NodeHost, IPs: []netip.Addr{addr("192.168.100.10"), addr("fd00:100::10")}},
		{Name: "p1", Kind: LocalPod, IPs: []netip.Addr{addr("10.244.1.5"), addr("fd00:244:1::5")}},
		{Name: "p2", Kind: LocalPod, IPs: []netip.Addr{addr("10.244.1.6"), addr("fd00:244:1::6")}},
		{Name: "p3", Kind: LocalPod, IPs: []netip.Addr{addr("10.244.1.8"), addr("fd00:244:1::8")}},
		{Name: "c", Kind: ClientPod, IPs: []netip.Addr{addr("10.244.1.7"), addr("fd00:244:1::7")}},
		{Name: "r1", Kind: RemotePod, IPs: []netip.Addr{addr("10.244.2.10")}},
		{Name: "r2", Kind: RemotePod, IPs: []netip.Addr{addr("10.244.2.11")}},
		{Name: "external", Kind: ExternalClient, IPs: []netip.Addr{addr("198.51.100.5"), addr("2001:db8:51::5")}},
		{Name: "outside", Kind: ExternalClient, IPs: []netip.Addr{addr("198.51.99.5")}},
	},
	TCPPorts:  []uint16{8080, 8081, 9090},
	UDPPorts:  []uint16{5353, 8080},
	SCTPPorts: []uint16{7777},
}

// MemberKind is what a member of the world is.
type MemberKind string

// The kinds of members.
const (
	LocalPod       MemberKind = "local-pod"  // a backend pod on this node
	ClientPod      MemberKind = "client-pod" // the pod probes start from
	RemotePod      MemberKind = "remote-pod" // a backend pod on node-2
	ExternalClient MemberKind = "external"   // a machine outside the cluster
	// NodeHost is node-1 itself as a server (host-network endpoints);
	// probes from the node use "from: node".
	NodeHost MemberKind = "node-host"
)

// Peer is the other node of the world.
type Peer struct {
	Name     string
	Zone     string
	IPs      []netip.Addr
	PodCIDRs []netip.Prefix
}

// Member is one named participant of the world.
type Member struct {
	Name string
	Kind MemberKind
	IPs  []netip.Addr // at most one per family, IPv4 first
}

// IP returns the member's address of the family of like (false if none).
func (m Member) IP(like netip.Addr) (netip.Addr, bool) {
	for _, ip := range m.IPs {
		if ip.Is4() == like.Is4() {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

type world struct {
	NodeName     string
	NodeZone     string
	NodeIPs      []netip.Addr
	NodePodCIDRs []netip.Prefix
	Peer         Peer
	Members      []Member
	// Every backend (local and remote pod) answers on these ports with its
	// identity, "name:port".
	TCPPorts, UDPPorts, SCTPPorts []uint16
}

// Member returns the named member.
func (w world) Member(name string) (Member, bool) {
	i := slices.IndexFunc(w.Members, func(m Member) bool { return m.Name == name })
	if i < 0 {
		return Member{}, false
	}
	return w.Members[i], true
}

// Backends lists the members that can be a Service's endpoints (local
// and remote pods, the node itself).
func (w world) Backends() []Member {
	var out []Member
	for _, m := range w.Members {
		if m.Kind == LocalPod || m.Kind == RemotePod || m.Kind == NodeHost {
			out = append(out, m)
		}
	}
	return out
}

// Serving reports whether a member answers on the world's ports
// (backends and external clients).
func (m Member) Serving() bool { return m.Kind != ClientPod }

// NodeObjects are the world's two Nodes as the API server holds them:
// addresses, zone, pod CIDRs.
func (w world) NodeObjects() []*v1.Node {
	node := func(name, zone string, ips []netip.Addr, cidrs []netip.Prefix) *v1.Node {
		var is, cs []string
		for _, ip := range ips {
			is = append(is, ip.String())
		}
		for _, c := range cidrs {
			cs = append(cs, c.String())
		}
		return testobj.WithPodCIDRs(testobj.Node(name, zone, is...), cs...)
	}
	return []*v1.Node{node(w.NodeName, w.NodeZone, w.NodeIPs, w.NodePodCIDRs), node(w.Peer.Name, w.Peer.Zone, w.Peer.IPs, w.Peer.PodCIDRs)}
}

// Owner names the backend holding ip ("" if none).
func (w world) Owner(ip netip.Addr) string {
	for _, m := range w.Backends() {
		if slices.Contains(m.IPs, ip) {
			return m.Name
		}
	}
	return ""
}

// named names the member holding ip, whatever its kind ("" if none).
func (w world) named(ip netip.Addr) string {
	for _, m := range w.Members {
		if slices.Contains(m.IPs, ip) {
			return m.Name
		}
	}
	return ""
}

// Serves reports whether backends listen on port for protocol.
func (w world) Serves(protocol string, port uint16) bool {
	switch protocol {
	case "TCP":
		return slices.Contains(w.TCPPorts, port)
	case "UDP":
		return slices.Contains(w.UDPPorts, port)
	case "SCTP":
		return slices.Contains(w.SCTPPorts, port)
	}
	return false
}

// NodeIP returns the node's address of a family ("4" or "6").
func (w world) NodeIP(v6 bool) netip.Addr {
	for _, ip := range w.NodeIPs {
		if ip.Is6() == v6 {
			return ip
		}
	}
	panic(fmt.Sprintf("world has no node IP of family v6=%v", v6))
}

// Identity is what a backend answers: "name:port".
func Identity(name string, port uint16) string { return fmt.Sprintf("%s:%d", name, port) }

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func prefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }
