//go:build linux

package hostnet

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/knftables"
)

func dualStack() Config {
	return Config{
		Gateway:         "sy-gw0",
		PodPortPrefix:   "syp",
		MTU:             1450,
		Addresses:       []netip.Prefix{netip.MustParsePrefix("10.244.1.1/24"), netip.MustParsePrefix("fd00:244:1::1/64")},
		VirtualIPs:      []netip.Addr{netip.MustParseAddr("169.254.255.253"), netip.MustParseAddr("fdff:5359::fffd")},
		NodePortIPs:     []netip.Addr{netip.MustParseAddr("169.254.255.252"), netip.MustParseAddr("fdff:5359::fffc")},
		NodeIPs:         []netip.Addr{netip.MustParseAddr("192.168.100.10"), netip.MustParseAddr("fd00:100::10")},
		PodCIDRs:        []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fd00:244:1::/64")},
		ClusterPodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("10.244.2.0/24"), netip.MustParsePrefix("fd00:244:1::/64")},
	}
}

// The table's declarations: the same for every node.
const tableHead = `add table inet switchyard { comment "switchyard: NodePorts into the OVS bridge, masquerade of what leaves the node" ; }
add chain inet switchyard capture { type filter hook prerouting priority -150 ; }
add chain inet switchyard capture-output { type route hook output priority -150 ; }
add chain inet switchyard nodeport-dnat
add chain inet switchyard output { type nat hook output priority -100 ; }
add chain inet switchyard pod-ports { type filter hook prerouting priority -300 ; }
add chain inet switchyard postrouting { type nat hook postrouting priority 100 ; }
add chain inet switchyard prerouting { type nat hook prerouting priority -100 ; }
add set inet switchyard captured-ports-v4 { type ipv4_addr . inet_proto . inet_service ; }
add set inet switchyard captured-ports-v6 { type ipv6_addr . inet_proto . inet_service ; }
add set inet switchyard cluster-pod-cidrs-v4 { type ipv4_addr ; flags interval ; }
add set inet switchyard cluster-pod-cidrs-v6 { type ipv6_addr ; flags interval ; }
add set inet switchyard local-pod-cidrs-v4 { type ipv4_addr ; flags interval ; }
add set inet switchyard local-pod-cidrs-v6 { type ipv6_addr ; flags interval ; }
add set inet switchyard node-ips-v4 { type ipv4_addr ; }
add set inet switchyard node-ips-v6 { type ipv6_addr ; }
add set inet switchyard node-ports { type inet_proto . inet_service ; }
`

// The dual-stack node's rules and elements (what each is for is in
// nft_linux.go): captured ports marked with their connection from outside
// and from the node, the replies through the gateway re-marked; pod veths'
// host ends dropped; NodePorts on the node's addresses DNATed to the
// NodePort address; the virtual IP and pods leaving the cluster
// masqueraded.
const dualStackBody = `add rule inet switchyard capture iifname "sy-gw0" ct mark & 0x400000 != 0 meta mark set meta mark | 0x400000
add rule inet switchyard capture iifname "sy-gw0" return
add rule inet switchyard capture ip daddr . meta l4proto . th dport @captured-ports-v4 meta mark set meta mark | 0x400000 ct mark set ct mark | 0x400000
add rule inet switchyard capture ip6 daddr . meta l4proto . th dport @captured-ports-v6 meta mark set meta mark | 0x400000 ct mark set ct mark | 0x400000
add rule inet switchyard capture-output ip daddr . meta l4proto . th dport @captured-ports-v4 meta mark set meta mark | 0x400000 ct mark set ct mark | 0x400000
add rule inet switchyard capture-output ip6 daddr . meta l4proto . th dport @captured-ports-v6 meta mark set meta mark | 0x400000 ct mark set ct mark | 0x400000
add rule inet switchyard nodeport-dnat ip daddr @node-ips-v4 meta l4proto . th dport @node-ports dnat ip to 169.254.255.252
add rule inet switchyard nodeport-dnat ip6 daddr @node-ips-v6 meta l4proto . th dport @node-ports dnat ip6 to fdff:5359::fffc
add rule inet switchyard output jump nodeport-dnat
add rule inet switchyard pod-ports iifname "syp*" drop
add rule inet switchyard postrouting oifname "sy-gw0" return
add rule inet switchyard postrouting ip saddr 169.254.255.253 masquerade
add rule inet switchyard postrouting ip6 saddr fdff:5359::fffd masquerade
add rule inet switchyard postrouting ip saddr @local-pod-cidrs-v4 ip daddr != @cluster-pod-cidrs-v4 masquerade
add rule inet switchyard postrouting ip6 saddr @local-pod-cidrs-v6 ip6 daddr != @cluster-pod-cidrs-v6 masquerade
add rule inet switchyard prerouting iifname "sy-gw0" return
add rule inet switchyard prerouting jump nodeport-dnat
add element inet switchyard captured-ports-v4 { 192.0.2.53 . tcp . 80 }
add element inet switchyard captured-ports-v6 { 2001:db8::53 . udp . 53 }
add element inet switchyard cluster-pod-cidrs-v4 { 10.244.1.0/24 }
add element inet switchyard cluster-pod-cidrs-v4 { 10.244.2.0/24 }
add element inet switchyard cluster-pod-cidrs-v6 { fd00:244:1::/64 }
add element inet switchyard local-pod-cidrs-v4 { 10.244.1.0/24 }
add element inet switchyard local-pod-cidrs-v6 { fd00:244:1::/64 }
add element inet switchyard node-ips-v4 { 192.168.100.10 }
add element inet switchyard node-ips-v6 { fd00:100::10 }
add element inet switchyard node-ports { tcp . 30080 }
add element inet switchyard node-ports { udp . 30053 }
`

// without is dump less the given lines (each must be in it).
func without(t *testing.T, dump string, lines ...string) string {
	t.Helper()
	all := strings.SplitAfter(dump, "\n")
	for _, l := range lines {
		i := slices.Index(all, l+"\n")
		if i < 0 {
			t.Fatalf("the expected dump has no line %q", l)
		}
		all = slices.Delete(all, i, i+1)
	}
	return strings.Join(all, "")
}

// run builds the table with tableTx on fake and returns its whole dump.
func run(t *testing.T, fake *knftables.Fake, c Config, nodePorts []ProtoPort, captures []Capture) string {
	t.Helper()
	tx := fake.NewTransaction()
	tableTx(tx, c, nodePorts, captures)
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	return fake.Dump()
}

func diffDump(t *testing.T, want, got string) {
	t.Helper()
	if d := cmp.Diff(strings.Split(want, "\n"), strings.Split(got, "\n")); d != "" {
		t.Errorf("table (-want +got):\n%s", d)
	}
}

// The table, as nft would hold it, whole; then rebuilt with a NodePort
// and the captures gone, which replaces it, never accumulates.
func TestTableContent(t *testing.T) {
	fake := knftables.NewFake(knftables.InetFamily, TableName)
	captures := []Capture{{netip.MustParseAddr("192.0.2.53"), "tcp", 80}, {netip.MustParseAddr("2001:db8::53"), "udp", 53}}
	want := tableHead + dualStackBody
	diffDump(t, want, run(t, fake, dualStack(), []ProtoPort{{"tcp", 30080}, {"udp", 30053}}, captures))

	rebuilt := without(t, want,
		"add element inet switchyard node-ports { udp . 30053 }",
		"add element inet switchyard captured-ports-v4 { 192.0.2.53 . tcp . 80 }",
		"add element inet switchyard captured-ports-v6 { 2001:db8::53 . udp . 53 }")
	diffDump(t, rebuilt, run(t, fake, dualStack(), []ProtoPort{{"tcp", 30080}}, nil))
}

// An IPv4-only node gets no IPv6 rules (their sets would stay empty, and
// an ip6 dnat without an address would not load); the cluster's IPv6 pod
// CIDR and the node's IPv6 address still fill their sets.
func TestTableOfASingleFamilyNode(t *testing.T) {
	c := dualStack()
	c.Addresses, c.PodCIDRs, c.NodePortIPs, c.VirtualIPs = c.Addresses[:1], c.PodCIDRs[:1], c.NodePortIPs[:1], c.VirtualIPs[:1]
	fake := knftables.NewFake(knftables.InetFamily, TableName)
	got := run(t, fake, c, nil, []Capture{{netip.MustParseAddr("192.0.2.53"), "tcp", 80}})
	want := without(t, tableHead+dualStackBody,
		"add rule inet switchyard capture ip6 daddr . meta l4proto . th dport @captured-ports-v6 meta mark set meta mark | 0x400000 ct mark set ct mark | 0x400000",
		"add rule inet switchyard capture-output ip6 daddr . meta l4proto . th dport @captured-ports-v6 meta mark set meta mark | 0x400000 ct mark set ct mark | 0x400000",
		"add rule inet switchyard nodeport-dnat ip6 daddr @node-ips-v6 meta l4proto . th dport @node-ports dnat ip6 to fdff:5359::fffc",
		"add rule inet switchyard postrouting ip6 saddr fdff:5359::fffd masquerade",
		"add rule inet switchyard postrouting ip6 saddr @local-pod-cidrs-v6 ip6 daddr != @cluster-pod-cidrs-v6 masquerade",
		"add element inet switchyard captured-ports-v6 { 2001:db8::53 . udp . 53 }",
		"add element inet switchyard local-pod-cidrs-v6 { fd00:244:1::/64 }",
		"add element inet switchyard node-ports { tcp . 30080 }",
		"add element inet switchyard node-ports { udp . 30053 }")
	diffDump(t, want, got)
}

// A config without a pod port prefix drops no interface: "*" would be
// every one, the node cut off.
func TestTableWithoutPodPortPrefix(t *testing.T) {
	c := dualStack()
	c.PodPortPrefix = ""
	fake := knftables.NewFake(knftables.InetFamily, TableName)
	got := run(t, fake, c, []ProtoPort{{"tcp", 30080}, {"udp", 30053}},
		[]Capture{{netip.MustParseAddr("192.0.2.53"), "tcp", 80}, {netip.MustParseAddr("2001:db8::53"), "udp", 53}})
	diffDump(t, without(t, tableHead+dualStackBody, `add rule inet switchyard pod-ports iifname "syp*" drop`), got)
}
