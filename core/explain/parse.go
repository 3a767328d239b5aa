package explain

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// ParseConnection reads --from and --to as a connection on node (the zero
// node: checks the syntax only).
func ParseConnection(from, to string, node graph.Node) (graph.Connection, error) {
	dst, port, proto, err := parseDestination(to)
	if err != nil {
		return graph.Connection{}, err
	}
	if from == "" {
		return graph.Connection{}, fmt.Errorf("--from is required: a pod's IP, an outside address, or node")
	}
	c := graph.Connection{Dst: dst, Port: port, Protocol: proto}
	if node.Name == "" && from == "node" {
		return c, nil
	}
	c.Src, c.FromThisNode, err = parseSource(from, node, dst)
	return c, err
}

// parseDestination reads IP:PORT[/PROTO].
func parseDestination(s string) (netip.Addr, uint16, graph.Protocol, error) {
	proto := graph.TCP
	if i := strings.LastIndex(s, "/"); i >= 0 {
		proto = graph.Protocol(strings.ToUpper(s[i+1:]))
		s = s[:i]
		if !slices.Contains([]graph.Protocol{graph.TCP, graph.UDP, graph.SCTP}, proto) {
			return netip.Addr{}, 0, "", fmt.Errorf("--to: protocol %q: want TCP, UDP or SCTP", proto)
		}
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil || ap.Port() == 0 {
		return netip.Addr{}, 0, "", fmt.Errorf("--to %q: want IP:PORT[/PROTO] ([IPv6]:PORT for IPv6)", s)
	}
	return ap.Addr().Unmap(), ap.Port(), proto, nil
}

// parseSource reads --from: "node" is the node's address of dst's family;
// an address in the node's pod CIDRs or among its addresses starts on
// this node.
func parseSource(s string, node graph.Node, dst netip.Addr) (netip.Addr, bool, error) {
	if s == "node" {
		ip, ok := graph.FirstOfFamily(node.IPs, graph.FamilyOf(dst))
		if !ok {
			return netip.Addr{}, false, fmt.Errorf("--from node: node %s has no %s address", node.Name, graph.FamilyOf(dst))
		}
		return ip, true, nil
	}
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false, fmt.Errorf("--from %q: want an IP address or node", s)
	}
	ip = ip.Unmap()
	if graph.FamilyOf(ip) != graph.FamilyOf(dst) {
		return netip.Addr{}, false, fmt.Errorf("--from %s and --to %s are of different IP families", ip, dst)
	}
	here := slices.Contains(node.IPs, ip) || slices.ContainsFunc(node.PodCIDRs, func(p netip.Prefix) bool { return p.Contains(ip) })
	return ip, here, nil
}
