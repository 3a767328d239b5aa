//go:build linux

package hostnet

import (
	"fmt"
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"sigs.k8s.io/knftables"
)

// The table's sets and chains.
const (
	setNodeIPs4      = "node-ips-v4"
	setNodeIPs6      = "node-ips-v6"
	setNodePorts     = "node-ports"
	setPodCIDRs4     = "local-pod-cidrs-v4"
	setPodCIDRs6     = "local-pod-cidrs-v6"
	setClusterCIDRs4 = "cluster-pod-cidrs-v4"
	setClusterCIDRs6 = "cluster-pod-cidrs-v6"
	setCaptures4     = "captured-ports-v4"
	setCaptures6     = "captured-ports-v6"

	chainPodPorts    = "pod-ports"
	chainNodePorts   = "nodeport-dnat"
	chainPrerouting  = "prerouting"
	chainOutput      = "output"
	chainPostrouting = "postrouting"
	chainCapture     = "capture"
	chainCaptureOut  = "capture-output"
)

// tableTx fills a transaction that makes the table hold exactly what the
// configuration and NodePorts call for. nftables applies a transaction
// whole or not at all, so traffic never sees a half-built table.
func tableTx(tx *knftables.Transaction, c Config, nodePorts []ProtoPort, captures []Capture) {
	setsAndChainsTx(tx)
	elementsTx(tx, c, nodePorts)
	capturesTx(tx, captures)
	captureRules(tx, c)
	podPortRules(tx, c)
	nodePortRules(tx, c)
	masqueradeRules(tx, c)
}

// setsAndChainsTx (re)makes the table, its sets and its chains, empty.
func setsAndChainsTx(tx *knftables.Transaction) {
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("switchyard: NodePorts into the OVS bridge, masquerade of what leaves the node")})
	for _, s := range tableSets() {
		tx.Add(s)
		tx.Flush(s)
	}
	for _, ch := range tableChains() {
		tx.Add(ch)
		tx.Flush(ch)
	}
}

// tableSets are the table's sets.
func tableSets() []*knftables.Set {
	return []*knftables.Set{
		{Name: setNodeIPs4, Type: "ipv4_addr"},
		{Name: setNodeIPs6, Type: "ipv6_addr"},
		{Name: setNodePorts, Type: "inet_proto . inet_service"},
		{Name: setPodCIDRs4, Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.IntervalFlag}},
		{Name: setPodCIDRs6, Type: "ipv6_addr", Flags: []knftables.SetFlag{knftables.IntervalFlag}},
		{Name: setClusterCIDRs4, Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.IntervalFlag}},
		{Name: setClusterCIDRs6, Type: "ipv6_addr", Flags: []knftables.SetFlag{knftables.IntervalFlag}},
		{Name: setCaptures4, Type: "ipv4_addr . inet_proto . inet_service"},
		{Name: setCaptures6, Type: "ipv6_addr . inet_proto . inet_service"},
	}
}

// tableChains are the table's chains.
func tableChains() []*knftables.Chain {
	nat, filter, route := knftables.NATType, knftables.FilterType, knftables.RouteType
	return []*knftables.Chain{
		{Name: chainCapture, Type: &filter, Hook: knftables.PtrTo(knftables.PreroutingHook), Priority: knftables.PtrTo(knftables.ManglePriority)},
		{Name: chainCaptureOut, Type: &route, Hook: knftables.PtrTo(knftables.OutputHook), Priority: knftables.PtrTo(knftables.ManglePriority)},
		{Name: chainPodPorts, Type: &filter, Hook: knftables.PtrTo(knftables.PreroutingHook), Priority: knftables.PtrTo(knftables.RawPriority)},
		{Name: chainNodePorts},
		{Name: chainPrerouting, Type: &nat, Hook: knftables.PtrTo(knftables.PreroutingHook), Priority: knftables.PtrTo(knftables.DNATPriority)},
		{Name: chainOutput, Type: &nat, Hook: knftables.PtrTo(knftables.OutputHook), Priority: knftables.PtrTo(knftables.DNATPriority)},
		{Name: chainPostrouting, Type: &nat, Hook: knftables.PtrTo(knftables.PostroutingHook), Priority: knftables.PtrTo(knftables.SNATPriority)},
	}
}

// elementsTx fills the sets of node addresses, NodePorts and pod CIDRs.
func elementsTx(tx *knftables.Transaction, c Config, nodePorts []ProtoPort) {
	for _, ip := range c.NodeIPs {
		tx.Add(&knftables.Element{Set: familySet(ip, setNodeIPs4, setNodeIPs6), Key: []string{ip.String()}})
	}
	for _, p := range nodePorts {
		tx.Add(nodePortElement(p))
	}
	for _, p := range c.PodCIDRs {
		tx.Add(&knftables.Element{Set: familySet(p.Addr(), setPodCIDRs4, setPodCIDRs6), Key: []string{p.Masked().String()}})
	}
	for _, p := range c.ClusterPodCIDRs {
		tx.Add(&knftables.Element{Set: familySet(p.Addr(), setClusterCIDRs4, setClusterCIDRs6), Key: []string{p.Masked().String()}})
	}

}

// podPortRules drops what arrives on a pod veth's host end: the veth is a
// port of the bridge, so what arrives there is the bridge's, never the
// host's. (The kernel datapath takes such packets from the host's stack;
// the userspace datapath reads them as a raw socket and leaves them to
// it, which would answer or route them.) Without a prefix the pattern
// would be "*", every interface: no rule.
func podPortRules(tx *knftables.Transaction, c Config) {
	if c.PodPortPrefix != "" {
		tx.Add(&knftables.Rule{Chain: chainPodPorts, Rule: knftables.Concat("iifname", quote(c.PodPortPrefix+"*"), "drop")})
	}

}

// nodePortRules send NodePorts on the node's addresses, from outside and
// from the node itself, to the NodePort address, which is routed into the
// bridge.
func nodePortRules(tx *knftables.Transaction, c Config) {
	for _, ip := range c.NodePortIPs {
		ipv, set := nfFamily(ip), familySet(ip, setNodeIPs4, setNodeIPs6)
		tx.Add(&knftables.Rule{Chain: chainNodePorts, Rule: knftables.Concat(
			ipv, "daddr", "@"+set, "meta l4proto . th dport", "@"+setNodePorts, "dnat", ipv, "to", ip.String())})
	}
	tx.Add(&knftables.Rule{Chain: chainPrerouting, Rule: knftables.Concat("iifname", quote(c.Gateway), "return")})
	tx.Add(&knftables.Rule{Chain: chainPrerouting, Rule: "jump " + chainNodePorts})
	tx.Add(&knftables.Rule{Chain: chainOutput, Rule: "jump " + chainNodePorts})

}

// masqueradeRules: what leaves the node by another interface than the
// gateway (connections the bridge masqueraded to the virtual address, and
// pods reaching beyond the cluster's pod CIDRs) takes the node's address.
func masqueradeRules(tx *knftables.Transaction, c Config) {
	tx.Add(&knftables.Rule{Chain: chainPostrouting, Rule: knftables.Concat("oifname", quote(c.Gateway), "return")})
	for _, ip := range c.VirtualIPs {
		tx.Add(&knftables.Rule{Chain: chainPostrouting, Rule: knftables.Concat(nfFamily(ip), "saddr", ip.String(), "masquerade")})
	}
	for _, fam := range []graph.IPFamily{graph.IPv4, graph.IPv6} {
		if !hasFamily(c.PodCIDRs, fam) {
			continue
		}
		ipv, local, cluster := "ip", setPodCIDRs4, setClusterCIDRs4
		if fam == graph.IPv6 {
			ipv, local, cluster = "ip6", setPodCIDRs6, setClusterCIDRs6
		}
		tx.Add(&knftables.Rule{Chain: chainPostrouting, Rule: knftables.Concat(
			ipv, "saddr", "@"+local, ipv, "daddr", "!=", "@"+cluster, "masquerade")})
	}
}

// captureRules mark what goes to a captured port (CaptureTable routes it
// into the bridge), from outside and from the node itself, and its
// connection, so that the replies coming back through the gateway carry
// the mark too (the gateway's reverse-path check follows it: captureRouting).
func captureRules(tx *knftables.Transaction, c Config) {
	mark := fmt.Sprintf("%#x", CaptureMark)
	setMarks := knftables.Concat("meta mark set meta mark |", mark, "ct mark set ct mark |", mark)
	tx.Add(&knftables.Rule{Chain: chainCapture, Rule: knftables.Concat(
		"iifname", quote(c.Gateway), "ct mark &", mark, "!= 0 meta mark set meta mark |", mark)})
	tx.Add(&knftables.Rule{Chain: chainCapture, Rule: knftables.Concat("iifname", quote(c.Gateway), "return")})
	for _, chain := range []string{chainCapture, chainCaptureOut} {
		if c.Families().Has(graph.IPv4) {
			tx.Add(&knftables.Rule{Chain: chain, Rule: knftables.Concat("ip daddr . meta l4proto . th dport", "@"+setCaptures4, setMarks)})
		}
		if c.Families().Has(graph.IPv6) {
			tx.Add(&knftables.Rule{Chain: chain, Rule: knftables.Concat("ip6 daddr . meta l4proto . th dport", "@"+setCaptures6, setMarks)})
		}
	}
}

// capturesTx replaces the captured-port sets' elements (the table's
// rewrite: tableTx).
func capturesTx(tx *knftables.Transaction, captures []Capture) {
	tx.Flush(&knftables.Set{Name: setCaptures4})
	tx.Flush(&knftables.Set{Name: setCaptures6})
	for _, cp := range captures {
		tx.Add(captureElement(cp))
	}
}

// A change's transactions touch only the elements that came or went, so
// that what one costs does not grow with the set: 12 000 NodePorts at 30k
// Services would be ~0.1 s of nft for each NodePort Service written
// otherwise (docs/scale.md). An element that went is destroyed, which is
// no error when the set lost it meanwhile (the next full sync, or audit,
// rewrites the table whole anyway).

// capturesDeltaTx changes the captured-port sets from holding from to
// holding to.
func capturesDeltaTx(tx *knftables.Transaction, from, to []Capture) {
	elementsDeltaTx(tx, from, to, captureElement)
}

// nodePortsDeltaTx changes the NodePort set from holding from to holding
// to.
func nodePortsDeltaTx(tx *knftables.Transaction, from, to []ProtoPort) {
	elementsDeltaTx(tx, from, to, nodePortElement)
}

// elementsDeltaTx adds the elements of to that from lacks and destroys
// those of from that to lacks, in the order of each list.
func elementsDeltaTx[T comparable](tx *knftables.Transaction, from, to []T, element func(T) *knftables.Element) {
	had := make(map[T]bool, len(from))
	for _, e := range from {
		had[e] = true
	}
	kept := make(map[T]bool, len(to))
	for _, e := range to {
		kept[e] = true
		if !had[e] {
			tx.Add(element(e))
		}
	}
	for _, e := range from {
		if !kept[e] {
			tx.Destroy(element(e))
		}
	}
}

func captureElement(cp Capture) *knftables.Element {
	return &knftables.Element{Set: familySet(cp.IP, setCaptures4, setCaptures6), Key: []string{cp.IP.String(), cp.Proto, fmt.Sprint(cp.Port)}}
}

func nodePortElement(p ProtoPort) *knftables.Element {
	return &knftables.Element{Set: setNodePorts, Key: []string{p.Proto, fmt.Sprint(p.Port)}}
}

func nfFamily(ip netip.Addr) string {
	if ip.Is4() {
		return "ip"
	}
	return "ip6"
}

func familySet(ip netip.Addr, v4, v6 string) string {
	if ip.Is4() {
		return v4
	}
	return v6
}

func hasFamily(ps []netip.Prefix, fam graph.IPFamily) bool {
	for _, p := range ps {
		if graph.FamilyOf(p.Addr()) == fam {
			return true
		}
	}
	return false
}

func quote(s string) string { return `"` + s + `"` }
