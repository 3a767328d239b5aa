package pipeline

import (
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn/ofconntest"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// The golden files under testdata hold, for representative service
// ports and for the static, pod and peer flows, the groups and flows the
// pipeline makes, as `switchyard render` prints them (cookies included:
// a cookie is a hash of the flow's OpenFlow encoding, so an unchanged
// golden file means unchanged messages, and a restarted driver of the
// next version adopts the flows without a change).
//
// go test ./ovs/pipeline -update rewrites them; review the diff.
var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func mustMAC(s string) net.HardwareAddr {
	mac, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return mac
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// goldenConfig is a dual-stack node in overlay mode: gateway port 1,
// tunnel port 2.
func goldenConfig() *Config {
	return &Config{
		CtZone: 0x5359, RouterMAC: mustMAC("0a:53:59:00:00:01"),
		NodeIPs:     addrs("192.168.100.10", "fd00:100::10"),
		PodCIDRs:    []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fd00:244:1::/64")},
		VirtualIPs:  addrs("169.254.255.253", "fdff:5359::fffd"),
		NodePortIPs: addrs("169.254.255.252", "fdff:5359::fffc"),
		GatewayPort: 1, GatewayMAC: mustMAC("0a:58:0a:f4:01:01"), TunnelPort: 2, ControllerID: 0x5359,
	}
}

// goldenIDs gives each slot a fixed group ID.
func goldenIDs(slot string) uint32 {
	slots := []string{"IPv4/internal", "IPv4/external", "IPv4/short-circuit", "IPv6/internal", "IPv6/external", "IPv6/short-circuit"}
	return 0x80000000 | uint32(slices.Index(slots, slot)+1)
}

func ep(ip string, local bool) graph.Endpoint {
	return graph.Endpoint{IP: netip.MustParseAddr(ip), Port: 8080, Local: local, Ready: true, Serving: true}
}

var (
	v4Only = graph.FamilySet(0).With(graph.IPv4)
	dual   = v4Only.With(graph.IPv6)
)

func port(name string, proto graph.Protocol, opts func(*graph.ServicePort)) *graph.ServicePort {
	sp := &graph.ServicePort{Name: graph.ServicePortName{Namespace: "ns", Name: name, Port: "p", Protocol: proto},
		ClusterIPs: addrs("10.96.0.10"), Port: 80, UsableFamilies: v4Only,
		InternalTrafficPolicy: graph.PolicyCluster, ExternalTrafficPolicy: graph.PolicyCluster}
	opts(sp)
	return sp
}

// goldenPorts are the service ports with a golden file each, by name.
func goldenPorts() map[string]*graph.ServicePort {
	here, there := ep("10.244.1.5", true), ep("10.244.2.10", false)
	both := graph.EndpointListOf(here, there)
	return map[string]*graph.ServicePort{
		"clusterip": port("clusterip", graph.TCP, func(sp *graph.ServicePort) { sp.InternalEndpoints = both }),
		"clusterip-udp": port("dns", graph.UDP, func(sp *graph.ServicePort) {
			sp.Port, sp.InternalEndpoints = 53, both
		}),
		"nodeport": port("nodeport", graph.TCP, func(sp *graph.ServicePort) {
			sp.NodePort, sp.InternalEndpoints, sp.ExternalEndpoints = 30080, both, both
		}),
		"etp-local": port("local", graph.TCP, func(sp *graph.ServicePort) {
			sp.NodePort, sp.LoadBalancerIPs, sp.ExternalTrafficPolicy = 30081, addrs("203.0.113.7"), graph.PolicyLocal
			sp.InternalEndpoints, sp.ExternalEndpoints, sp.ShortCircuitEndpoints = both, graph.EndpointListOf(here), both
		}),
		"etp-local-no-local-endpoint": port("local-elsewhere", graph.TCP, func(sp *graph.ServicePort) {
			sp.NodePort, sp.ExternalTrafficPolicy = 30082, graph.PolicyLocal
			sp.InternalEndpoints, sp.ShortCircuitEndpoints = graph.EndpointListOf(there), graph.EndpointListOf(there)
		}),
		"lb-source-ranges": port("ranges", graph.TCP, func(sp *graph.ServicePort) {
			sp.LoadBalancerIPs = addrs("203.0.113.8")
			sp.LoadBalancerSourceRanges = []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("192.0.2.0/25")}
			sp.InternalEndpoints, sp.ExternalEndpoints = both, both
		}),
		"external-ip-on-node": port("extip", graph.TCP, func(sp *graph.ServicePort) {
			sp.ExternalIPs, sp.InternalEndpoints, sp.ExternalEndpoints = addrs("192.168.100.10"), both, both
		}),
		"affinity": port("sticky", graph.TCP, func(sp *graph.ServicePort) {
			sp.SessionAffinity = graph.SessionAffinity{ClientIP: true, TimeoutSeconds: 10800}
			sp.NodePort, sp.InternalEndpoints, sp.ExternalEndpoints = 30083, both, both
		}),
		"affinity-clamped-sctp": port("sticky-sctp", graph.SCTP, func(sp *graph.ServicePort) {
			sp.SessionAffinity = graph.SessionAffinity{ClientIP: true, TimeoutSeconds: 86400}
			sp.InternalEndpoints = both
		}),
		"affinity-dual-stack-etp-local": port("sticky-dual", graph.TCP, func(sp *graph.ServicePort) {
			sp.SessionAffinity = graph.SessionAffinity{ClientIP: true, TimeoutSeconds: 600}
			sp.ClusterIPs, sp.NodePort, sp.UsableFamilies = addrs("10.96.0.10", "fd00:96::10"), 30086, dual
			sp.ExternalTrafficPolicy = graph.PolicyLocal
			eps := graph.EndpointListOf(here, there, ep("fd00:244:1::5", true), ep("fd00:244:2::5", false))
			sp.InternalEndpoints, sp.ShortCircuitEndpoints = eps, eps
			sp.ExternalEndpoints = graph.EndpointListOf(here, ep("fd00:244:1::5", true))
		}),
		"no-endpoints-reject": port("empty", graph.TCP, func(sp *graph.ServicePort) {
			sp.NodePort, sp.UsableFamilies = 30084, 0
		}),
		"dual-stack": port("dual", graph.TCP, func(sp *graph.ServicePort) {
			sp.ClusterIPs, sp.NodePort, sp.UsableFamilies = addrs("10.96.0.10", "fd00:96::10"), 30085, dual
			eps := graph.EndpointListOf(here, there, ep("fd00:244:1::5", true))
			sp.InternalEndpoints, sp.ExternalEndpoints = eps, eps
		}),
		"dual-stack-ipv6-without-endpoints": port("dual-half", graph.TCP, func(sp *graph.ServicePort) {
			sp.ClusterIPs, sp.InternalEndpoints = addrs("10.96.0.10", "fd00:96::10"), both
		}),
	}
}

// renderFlows writes groups and flows as `switchyard render` does:
// groups by ID, flows by table, priority (highest first) and text.
func renderFlows(groups []*of.Group, flows []*of.Flow) string {
	var b strings.Builder
	groups = slices.Clone(groups)
	slices.SortFunc(groups, func(x, y *of.Group) int { return int(int64(x.ID) - int64(y.ID)) })
	flows = slices.Clone(flows)
	slices.SortFunc(flows, func(x, y *of.Flow) int {
		if x.Table != y.Table {
			return int(x.Table) - int(y.Table)
		}
		if x.Priority != y.Priority {
			return int(y.Priority) - int(x.Priority)
		}
		return strings.Compare(x.Text(), y.Text())
	})
	b.WriteString("# groups\n")
	for _, g := range groups {
		b.WriteString(g.Text() + "\n")
	}
	b.WriteString("# flows\n")
	for _, f := range flows {
		b.WriteString(f.Text() + "\n")
	}
	return b.String()
}

// checkGolden compares got with a golden file (or rewrites it, -update).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./ovs/pipeline -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from what the pipeline makes now (go test ./ovs/pipeline -update rewrites it; review the diff):\n%s", path, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for _, l := range w {
		if !slices.Contains(g, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

func TestServiceFlowsGolden(t *testing.T) {
	for name, sp := range goldenPorts() {
		t.Run(name, func(t *testing.T) {
			c := goldenConfig()
			res := ServiceFlows(c, sp, goldenIDs, nil)
			flows := append(slices.Clone(res.Flows), res.Endpoints...)
			got := renderFlows(res.Groups, flows)
			got += fmt.Sprintf("# affinity timeout clamped: %v\n", res.AffinityClamped)
			checkGolden(t, "service-"+name, got)
			// And OVS would take them, with the static flows, in one bundle.
			b := &ofconn.Batch{GroupAdds: res.Groups, FlowAdds: append(StaticFlows(c), flows...)}
			if err := ofconntest.NewBridge().Apply(b); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The flows that do not depend on services: static, a dual-stack pod and
// a peer reached through the tunnel.
func TestNodeFlowsGolden(t *testing.T) {
	c := goldenConfig()
	flows := StaticFlows(c)
	flows = append(flows, PodFlows(c, Pod{Name: "ns/p1", Port: 5, MAC: mustMAC("0a:58:0a:f4:01:05"), IPs: addrs("10.244.1.5", "fd00:244:1::5")})...)
	flows = append(flows, PeerFlows(c, Peer{Name: "node-2", IP: netip.MustParseAddr("192.168.100.11"),
		PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.2.0/24"), netip.MustParsePrefix("fd00:244:2::/64")}})...)
	checkGolden(t, "node", renderFlows(nil, flows))
	if err := ofconntest.NewBridge().Apply(&ofconn.Batch{FlowAdds: flows}); err != nil {
		t.Fatal(err)
	}
}

// With CommitNullSNAT, the commits of connections that are no service's
// carry nat(src), and nothing else changes; OVS would take them.
func TestCommitNullSNATChangesOnlyTheCommits(t *testing.T) {
	cookie := regexp.MustCompile(`cookie=0x[0-9a-f]+,`)
	texts := func(c *Config) []string {
		var out []string
		for _, f := range StaticFlows(c) {
			out = append(out, cookie.ReplaceAllString(f.Text(), ""))
		}
		slices.Sort(out)
		return out
	}
	plain := goldenConfig()
	var want []string
	for _, l := range texts(plain) {
		if strings.HasPrefix(l, "table=10,") {
			l = strings.Replace(l, "ct(commit,zone=21337", "ct(commit,zone=21337,nat(src)", 1)
		}
		want = append(want, l)
	}
	slices.Sort(want)
	natted := goldenConfig()
	natted.CommitNullSNAT = true
	got := texts(natted)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("static flows with CommitNullSNAT (-want +got):\n%s", diff)
	}
	if n := strings.Count(strings.Join(got, "\n"), "nat(src)"); n != 4 {
		t.Errorf("%d commits with nat(src), want 4 (each family, plain and from the tunnel)", n)
	}
	if err := ofconntest.NewBridge().Apply(&ofconn.Batch{FlowAdds: StaticFlows(natted)}); err != nil {
		t.Fatal(err)
	}
}
