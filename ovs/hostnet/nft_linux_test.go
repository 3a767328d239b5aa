//go:build linux

package hostnet

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"
)

func dualStack() Config {
	return Config{
		Gateway:         "sy-gw0",
		MTU:             1450,
		Addresses:       []netip.Prefix{netip.MustParsePrefix("10.244.1.1/24"), netip.MustParsePrefix("fd00:244:1::1/64")},
		VirtualIPs:      []netip.Addr{netip.MustParseAddr("169.254.255.253"), netip.MustParseAddr("fdff:5359::fffd")},
		NodePortIPs:     []netip.Addr{netip.MustParseAddr("169.254.255.252"), netip.MustParseAddr("fdff:5359::fffc")},
		NodeIPs:         []netip.Addr{netip.MustParseAddr("192.168.100.10"), netip.MustParseAddr("fd00:100::10")},
		PodCIDRs:        []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fd00:244:1::/64")},
		ClusterPodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("10.244.2.0/24"), netip.MustParsePrefix("fd00:244:1::/64")},
	}
}

// The table, as nft would hold it: what each rule is for is in nft_linux.go.
func TestTableContent(t *testing.T) {
	fake := knftables.NewFake(knftables.InetFamily, TableName)
	tx := fake.NewTransaction()
	captures := []Capture{{netip.MustParseAddr("192.0.2.53"), "tcp", 80}, {netip.MustParseAddr("2001:db8::53"), "udp", 53}}
	tableTx(tx, dualStack(), []ProtoPort{{"tcp", 30080}, {"udp", 30053}}, captures)
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	dump := fake.Dump()
	for _, want := range []string{
		"add rule inet switchyard nodeport-dnat ip daddr @node-ips-v4 meta l4proto . th dport @node-ports dnat ip to 169.254.255.252",
		"add rule inet switchyard nodeport-dnat ip6 daddr @node-ips-v6 meta l4proto . th dport @node-ports dnat ip6 to fdff:5359::fffc",
		`add rule inet switchyard prerouting iifname "sy-gw0" return`,
		"add rule inet switchyard prerouting jump nodeport-dnat",
		"add rule inet switchyard output jump nodeport-dnat",
		`add rule inet switchyard postrouting oifname "sy-gw0" return`,
		"add rule inet switchyard postrouting ip saddr 169.254.255.253 masquerade",
		"add rule inet switchyard postrouting ip6 saddr fdff:5359::fffd masquerade",
		"add rule inet switchyard postrouting ip saddr @local-pod-cidrs-v4 ip daddr != @cluster-pod-cidrs-v4 masquerade",
		"add rule inet switchyard postrouting ip6 saddr @local-pod-cidrs-v6 ip6 daddr != @cluster-pod-cidrs-v6 masquerade",
		"add element inet switchyard node-ports { tcp . 30080 }",
		"add element inet switchyard node-ports { udp . 30053 }",
		"add element inet switchyard node-ips-v4 { 192.168.100.10 }",
		"add element inet switchyard cluster-pod-cidrs-v4 { 10.244.2.0/24 }",
		// Captured ports: marked with their connection from outside and
		// from the node, the replies through the gateway re-marked.
		`add rule inet switchyard capture iifname "sy-gw0" ct mark & 0x400000 != 0 meta mark set meta mark | 0x400000`,
		`add rule inet switchyard capture iifname "sy-gw0" return`,
		"add rule inet switchyard capture ip daddr . meta l4proto . th dport @captured-ports-v4 meta mark set meta mark | 0x400000 ct mark set ct mark | 0x400000",
		"add rule inet switchyard capture ip6 daddr . meta l4proto . th dport @captured-ports-v6 meta mark set meta mark | 0x400000 ct mark set ct mark | 0x400000",
		"add rule inet switchyard capture-output ip daddr . meta l4proto . th dport @captured-ports-v4 meta mark set meta mark | 0x400000 ct mark set ct mark | 0x400000",
		"add element inet switchyard captured-ports-v4 { 192.0.2.53 . tcp . 80 }",
		"add element inet switchyard captured-ports-v6 { 2001:db8::53 . udp . 53 }",
	} {
		if !strings.Contains(dump, want+"\n") {
			t.Errorf("table lacks %q:\n%s", want, dump)
		}
	}

	// Rebuilding replaces, never accumulates: a NodePort that went is gone.
	tx = fake.NewTransaction()
	tableTx(tx, dualStack(), []ProtoPort{{"tcp", 30080}}, nil)
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	if again := fake.Dump(); strings.Contains(again, "udp . 30053") || strings.Contains(again, "192.0.2.53") || strings.Count(again, "jump nodeport-dnat") != 2 {
		t.Fatalf("rebuilt table kept old content:\n%s", again)
	}
}

// An IPv4-only node gets no IPv6 rules (their sets would stay empty, and
// an ip6 dnat without an address would not load).
func TestTableOfASingleFamilyNode(t *testing.T) {
	c := dualStack()
	c.Addresses, c.PodCIDRs, c.NodePortIPs, c.VirtualIPs = c.Addresses[:1], c.PodCIDRs[:1], c.NodePortIPs[:1], c.VirtualIPs[:1]
	fake := knftables.NewFake(knftables.InetFamily, TableName)
	tx := fake.NewTransaction()
	tableTx(tx, c, nil, []Capture{{netip.MustParseAddr("192.0.2.53"), "tcp", 80}})
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	for _, rule := range strings.Split(fake.Dump(), "\n") {
		if strings.HasPrefix(rule, "add rule") && strings.Contains(rule, "ip6 ") {
			t.Errorf("IPv6 rule on an IPv4-only node: %s", rule)
		}
	}
}
