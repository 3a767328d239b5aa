package build

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// view is a compact, comparable summary of one service port.
type view struct {
	internal, external, shortCircuit string // "ip:port" lists, space separated
	usable                           string // families with usable endpoints
}

func summarize(sp *graph.ServicePort) view {
	join := func(eps []graph.Endpoint) string {
		var s []string
		for _, e := range eps {
			s = append(s, e.String())
		}
		return strings.Join(s, " ")
	}
	var fams []string
	for _, f := range sp.UsableFamilies.List() {
		fams = append(fams, f.String())
	}
	return view{join(sp.InternalEndpoints.Slice()), join(sp.ExternalEndpoints.Slice()), join(sp.ShortCircuitEndpoints.Slice()), strings.Join(fams, ",")}
}

const ns = "ns"

var (
	v4   = discovery.AddressTypeIPv4
	v6   = discovery.AddressTypeIPv6
	tcp  = v1.ProtocolTCP
	udp  = v1.ProtocolUDP
	sctp = v1.ProtocolSCTP
	n1   = graph.Node{Name: "node-1", Zone: "zone-a"}
)

// endpointSetCase is a Service and its slices, with the endpoint lists
// each port gets on n1.
type endpointSetCase struct {
	name   string
	svc    *v1.Service
	slices []*discovery.EndpointSlice
	want   map[string]view // by port name
}

// endpointSetCases are the situations TestServiceEndpointSets checks;
// explain's tests reuse them.
var endpointSetCases = []endpointSetCase{{
	name: "ClusterIP: ready endpoints from every node",
	svc:  Service(ns, "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0)),
	slices: []*discovery.EndpointSlice{Slice(ns, "web-1", "web", v4, SlicePort("http", tcp, 8080),
		Endpoint("10.244.1.5", OnNode("node-1")), Endpoint("10.244.2.5", OnNode("node-2")), Endpoint("10.244.3.5", NotReady))},
	want: map[string]view{"http": {internal: "10.244.1.5:8080 10.244.2.5:8080", usable: "IPv4"}},
}, {
	name: "ports are matched by name and protocol",
	svc: Service(ns, "dns", ClusterIPs("10.96.0.10"),
		Port("dns", udp, 53, 0), Port("dns-tcp", tcp, 53, 0), Port("metrics", tcp, 9153, 0)),
	slices: []*discovery.EndpointSlice{Slice(ns, "dns-1", "dns", v4,
		SlicePort("dns", udp, 5353), SlicePort("dns-tcp", tcp, 5353), SlicePort("metrics", udp, 9153),
		Endpoint("10.244.1.5"))},
	want: map[string]view{
		"dns":     {internal: "10.244.1.5:5353", usable: "IPv4"},
		"dns-tcp": {internal: "10.244.1.5:5353", usable: "IPv4"},
		"metrics": {usable: ""}, // the slice's metrics port is UDP: no match
	},
}, {
	name: "named target port with different numbers per slice keeps both",
	svc:  Service(ns, "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0)),
	slices: []*discovery.EndpointSlice{
		Slice(ns, "web-a", "web", v4, SlicePort("http", tcp, 8080), Endpoint("10.244.1.5")),
		Slice(ns, "web-b", "web", v4, SlicePort("http", tcp, 9090), Endpoint("10.244.1.6")),
	},
	want: map[string]view{"http": {internal: "10.244.1.5:8080 10.244.1.6:9090", usable: "IPv4"}},
}, {
	name: "an endpoint in two slices appears once, its non-terminating copy wins",
	svc:  Service(ns, "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0)),
	slices: []*discovery.EndpointSlice{
		Slice(ns, "web-a", "web", v4, SlicePort("http", tcp, 8080), Endpoint("10.244.1.5"), Endpoint("10.244.1.6", Terminating)),
		Slice(ns, "web-b", "web", v4, SlicePort("http", tcp, 8080), Endpoint("10.244.1.5", Terminating), Endpoint("10.244.1.6")),
	},
	want: map[string]view{"http": {internal: "10.244.1.5:8080 10.244.1.6:8080", usable: "IPv4"}},
}, {
	name: "dual-stack: each family is categorized on its own",
	svc:  Service(ns, "web", ClusterIPs("10.96.0.10", "fd00::10"), Port("http", tcp, 80, 0)),
	slices: []*discovery.EndpointSlice{
		Slice(ns, "web-v4", "web", v4, SlicePort("http", tcp, 8080), Endpoint("10.244.1.5"), Endpoint("10.244.1.6", Terminating)),
		Slice(ns, "web-v6", "web", v6, SlicePort("http", tcp, 8080), Endpoint("fd00:244::6", Terminating)),
	},
	// IPv4 has a ready endpoint, so its terminating one is unused; IPv6
	// has none ready, so it falls back to its serving-terminating one.
	want: map[string]view{"http": {internal: "10.244.1.5:8080 [fd00:244::6]:8080", usable: "IPv4,IPv6"}},
}, {
	name: "dual-stack with endpoints of one family only: the other rejects",
	svc:  Service(ns, "web", ClusterIPs("fd00::10", "10.96.0.10"), Port("http", tcp, 80, 0)),
	slices: []*discovery.EndpointSlice{
		Slice(ns, "web-v4", "web", v4, SlicePort("http", tcp, 8080), Endpoint("10.244.1.5")),
	},
	want: map[string]view{"http": {internal: "10.244.1.5:8080", usable: "IPv4"}},
}, {
	name: "single-stack IPv4 service ignores IPv6 slices",
	svc:  Service(ns, "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0)),
	slices: []*discovery.EndpointSlice{
		Slice(ns, "web-v6", "web", v6, SlicePort("http", tcp, 8080), Endpoint("fd00:244::6")),
	},
	want: map[string]view{"http": {usable: ""}},
}, {
	name: "NodePort, ETP=Local: outside traffic local only, node-originated traffic short-circuits to all",
	svc: Service(ns, "web", ClusterIPs("10.96.0.10"), Type(v1.ServiceTypeNodePort), ETPLocal,
		Port("http", tcp, 80, 30080)),
	slices: []*discovery.EndpointSlice{Slice(ns, "web-1", "web", v4, SlicePort("http", tcp, 8080),
		Endpoint("10.244.1.5", OnNode("node-1")), Endpoint("10.244.2.5", OnNode("node-2")))},
	want: map[string]view{"http": {
		internal: "10.244.1.5:8080 10.244.2.5:8080", external: "10.244.1.5:8080",
		shortCircuit: "10.244.1.5:8080 10.244.2.5:8080", usable: "IPv4",
	}},
}, {
	name: "NodePort, ETP=Local, no local endpoint: external list empty but endpoints exist (drop)",
	svc: Service(ns, "web", ClusterIPs("10.96.0.10"), Type(v1.ServiceTypeNodePort), ETPLocal,
		Port("http", tcp, 80, 30080)),
	slices: []*discovery.EndpointSlice{Slice(ns, "web-1", "web", v4, SlicePort("http", tcp, 8080),
		Endpoint("10.244.2.5", OnNode("node-2")))},
	want: map[string]view{"http": {
		internal: "10.244.2.5:8080", shortCircuit: "10.244.2.5:8080", usable: "IPv4",
	}},
}, {
	name: "NodePort, ETP=Local, local endpoint only terminating: used for external, not internal",
	svc: Service(ns, "web", ClusterIPs("10.96.0.10"), Type(v1.ServiceTypeNodePort), ETPLocal,
		Port("http", tcp, 80, 30080)),
	slices: []*discovery.EndpointSlice{Slice(ns, "web-1", "web", v4, SlicePort("http", tcp, 8080),
		Endpoint("10.244.1.5", OnNode("node-1"), Terminating), Endpoint("10.244.2.5", OnNode("node-2")))},
	want: map[string]view{"http": {
		internal: "10.244.2.5:8080", external: "10.244.1.5:8080", shortCircuit: "10.244.2.5:8080", usable: "IPv4",
	}},
}, {
	name: "NodePort, ETP=Cluster: external equals internal, no short-circuit list",
	svc: Service(ns, "web", ClusterIPs("10.96.0.10"), Type(v1.ServiceTypeNodePort),
		Port("http", tcp, 80, 30080)),
	slices: []*discovery.EndpointSlice{Slice(ns, "web-1", "web", v4, SlicePort("http", tcp, 8080),
		Endpoint("10.244.1.5", OnNode("node-1")), Endpoint("10.244.2.5", OnNode("node-2")))},
	want: map[string]view{"http": {
		internal: "10.244.1.5:8080 10.244.2.5:8080", external: "10.244.1.5:8080 10.244.2.5:8080", usable: "IPv4",
	}},
}, {
	name: "ITP=Local: ClusterIP reaches local endpoints only, NodePort all",
	svc: Service(ns, "web", ClusterIPs("10.96.0.10"), Type(v1.ServiceTypeNodePort), ITPLocal,
		Port("http", tcp, 80, 30080)),
	slices: []*discovery.EndpointSlice{Slice(ns, "web-1", "web", v4, SlicePort("http", tcp, 8080),
		Endpoint("10.244.1.5", OnNode("node-1")), Endpoint("10.244.2.5", OnNode("node-2")))},
	want: map[string]view{"http": {
		internal: "10.244.1.5:8080", external: "10.244.1.5:8080 10.244.2.5:8080", usable: "IPv4",
	}},
}, {
	name: "ITP=Local, no local endpoint: internal empty, endpoints exist (drop)",
	svc:  Service(ns, "web", ClusterIPs("10.96.0.10"), ITPLocal, Port("http", tcp, 80, 0)),
	slices: []*discovery.EndpointSlice{Slice(ns, "web-1", "web", v4, SlicePort("http", tcp, 8080),
		Endpoint("10.244.2.5", OnNode("node-2")))},
	want: map[string]view{"http": {usable: "IPv4"}},
}, {
	name: "no slices at all: nothing usable (reject)",
	svc:  Service(ns, "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0)),
	want: map[string]view{"http": {usable: ""}},
}, {
	name: "ExternalIP on a ClusterIP service with ETP=Local is externally accessible",
	svc: Service(ns, "web", ClusterIPs("10.96.0.10"), ExternalIPs("192.0.2.10"), ETPLocal,
		Port("http", tcp, 80, 0)),
	slices: []*discovery.EndpointSlice{Slice(ns, "web-1", "web", v4, SlicePort("http", tcp, 8080),
		Endpoint("10.244.1.5", OnNode("node-1")), Endpoint("10.244.2.5", OnNode("node-2")))},
	want: map[string]view{"http": {
		internal: "10.244.1.5:8080 10.244.2.5:8080", external: "10.244.1.5:8080",
		shortCircuit: "10.244.1.5:8080 10.244.2.5:8080", usable: "IPv4",
	}},
}, {
	name: "dual-stack ClusterIP with an IPv4 ExternalIP and ETP=Local: only IPv4 is external",
	svc: Service(ns, "web", ClusterIPs("10.96.0.10", "fd00::10"), ExternalIPs("192.0.2.10"), ETPLocal,
		Port("http", tcp, 80, 0)),
	slices: []*discovery.EndpointSlice{
		Slice(ns, "web-v4", "web", v4, SlicePort("http", tcp, 8080),
			Endpoint("10.244.1.5", OnNode("node-1")), Endpoint("10.244.2.5", OnNode("node-2"))),
		Slice(ns, "web-v6", "web", v6, SlicePort("http", tcp, 8080), Endpoint("fd00:244::5", OnNode("node-1"))),
	},
	want: map[string]view{"http": {
		internal: "10.244.1.5:8080 10.244.2.5:8080 [fd00:244::5]:8080", external: "10.244.1.5:8080",
		shortCircuit: "10.244.1.5:8080 10.244.2.5:8080", usable: "IPv4,IPv6",
	}},
}, {
	name: "zone hints through real slices and the node's zone",
	svc:  Service(ns, "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0)),
	slices: []*discovery.EndpointSlice{Slice(ns, "web-1", "web", v4, SlicePort("http", tcp, 8080),
		Endpoint("10.244.1.5", ZoneHints("zone-a")), Endpoint("10.244.2.5", ZoneHints("zone-b")))},
	want: map[string]view{"http": {internal: "10.244.1.5:8080", usable: "IPv4"}},
}, {
	name: "node hints through real slices",
	svc:  Service(ns, "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0)),
	slices: []*discovery.EndpointSlice{Slice(ns, "web-1", "web", v4, SlicePort("http", tcp, 8080),
		Endpoint("10.244.1.5", NodeHints("node-2"), ZoneHints("zone-a")),
		Endpoint("10.244.2.5", NodeHints("node-1"), ZoneHints("zone-a")))},
	want: map[string]view{"http": {internal: "10.244.2.5:8080", usable: "IPv4"}},
}, {
	name: "UDP and SCTP ports",
	svc:  Service(ns, "multi", ClusterIPs("10.96.0.10"), Port("u", udp, 53, 0), Port("s", sctp, 9999, 0)),
	slices: []*discovery.EndpointSlice{Slice(ns, "multi-1", "multi", v4,
		SlicePort("u", udp, 53), SlicePort("s", sctp, 9999), Endpoint("10.244.1.5"))},
	want: map[string]view{
		"u": {internal: "10.244.1.5:53", usable: "IPv4"},
		"s": {internal: "10.244.1.5:9999", usable: "IPv4"},
	},
}}

func TestServiceEndpointSets(t *testing.T) {
	for _, tc := range endpointSetCases {
		t.Run(tc.name, func(t *testing.T) {
			res := fromAPI(tc.svc, tc.slices, n1, Options{})
			if res.Skipped != "" {
				t.Fatalf("skipped: %s", res.Skipped)
			}
			if len(res.Rejections) != 0 {
				t.Fatalf("unexpected rejections: %v", res.Rejections)
			}
			got := map[string]view{}
			for _, sp := range res.Ports {
				got[sp.Name.Port] = summarize(sp)
			}
			for port, w := range tc.want {
				if g, ok := got[port]; !ok {
					t.Errorf("port %q missing", port)
				} else if g != w {
					t.Errorf("port %q:\n got  %+v\n want %+v", port, g, w)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("got %d ports, want %d", len(got), len(tc.want))
			}
		})
	}
}

func TestServiceFrontends(t *testing.T) {
	svc := Service(ns, "lb", ClusterIPs("10.96.0.10", "fd00::10"), Type(v1.ServiceTypeLoadBalancer), ETPLocal,
		Port("http", tcp, 80, 30080), HealthCheckNodePort(32000),
		ExternalIPs("192.0.2.10", "2001:db8::10"), Ingress("198.51.100.7"), ProxyIngress("198.51.100.8"),
		Ingress("2001:db8::7"), SourceRanges(" 203.0.113.0/24", "2001:db8:1::/48", "203.0.113.9/24"),
		ClientIPAffinity(600), Annotation("example.com/x", "1"), Annotation("other", "2"))
	res := fromAPI(svc, nil, n1, Options{Annotations: []string{"example.com/x"}})
	if len(res.Ports) != 1 || len(res.Rejections) != 0 {
		t.Fatalf("ports=%d rejections=%v", len(res.Ports), res.Rejections)
	}
	sp := res.Ports[0]
	addrs := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, x := range s {
			out = append(out, netip.MustParseAddr(x))
		}
		return out
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"clusterIPs", sp.ClusterIPs, addrs("10.96.0.10", "fd00::10")},
		{"externalIPs", sp.ExternalIPs, addrs("192.0.2.10", "2001:db8::10")},
		{"lbIPs (Proxy-mode ingress left out)", sp.LoadBalancerIPs, addrs("198.51.100.7", "2001:db8::7")},
		{"sourceRanges (trimmed, masked, deduplicated)", sp.LoadBalancerSourceRanges,
			[]netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("2001:db8:1::/48")}},
		{"nodePort", sp.NodePort, uint16(30080)},
		{"healthCheckNodePort", sp.HealthCheckNodePort, uint16(32000)},
		{"affinity", sp.SessionAffinity, graph.SessionAffinity{ClientIP: true, TimeoutSeconds: 600}},
		{"etp", sp.ExternalTrafficPolicy, graph.PolicyLocal},
		{"itp", sp.InternalTrafficPolicy, graph.PolicyCluster},
		{"annotations", sp.Annotations["example.com/x"] + "|" + sp.Annotations["other"], "1|"},
	}
	for _, c := range checks {
		if !equalAny(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

func equalAny(a, b any) bool {
	switch x := a.(type) {
	case []netip.Addr:
		return slices.Equal(x, b.([]netip.Addr))
	case []netip.Prefix:
		return slices.Equal(x, b.([]netip.Prefix))
	}
	return a == b
}

func TestServicePolicyDefaults(t *testing.T) {
	cases := []struct {
		name     string
		svc      *v1.Service
		etp      graph.TrafficPolicy
		affinity graph.SessionAffinity
		hcPort   uint16
	}{
		{"ETP=Local on a plain ClusterIP service has no effect",
			Service(ns, "a", ClusterIPs("10.96.0.1"), ETPLocal, Port("p", tcp, 80, 0)), graph.PolicyCluster, graph.SessionAffinity{}, 0},
		{"NodePort with ETP=Local has no health check port (LoadBalancer only)",
			Service(ns, "a", ClusterIPs("10.96.0.1"), Type(v1.ServiceTypeNodePort), ETPLocal, HealthCheckNodePort(32000), Port("p", tcp, 80, 30001)),
			graph.PolicyLocal, graph.SessionAffinity{}, 0},
		{"ClientIP affinity without config uses the 10800 s default",
			Service(ns, "a", ClusterIPs("10.96.0.1"), ClientIPAffinity(0), Port("p", tcp, 80, 0)), graph.PolicyCluster,
			graph.SessionAffinity{ClientIP: true, TimeoutSeconds: 10800}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := fromAPI(tc.svc, nil, n1, Options{})
			if len(res.Ports) != 1 {
				t.Fatalf("ports = %d (%v)", len(res.Ports), res.Rejections)
			}
			sp := res.Ports[0]
			if sp.ExternalTrafficPolicy != tc.etp || sp.SessionAffinity != tc.affinity || sp.HealthCheckNodePort != tc.hcPort {
				t.Errorf("etp=%s affinity=%+v hc=%d, want %s %+v %d", sp.ExternalTrafficPolicy, sp.SessionAffinity,
					sp.HealthCheckNodePort, tc.etp, tc.affinity, tc.hcPort)
			}
		})
	}
}

func TestServiceSkipped(t *testing.T) {
	cases := []struct {
		name      string
		svc       *v1.Service
		proxyName string
		skipped   bool
	}{
		{"headless (clusterIP: None)", Service(ns, "h", ClusterIPs("None"), Port("p", tcp, 80, 0)), "", true},
		{"ExternalName", Service(ns, "e", Type(v1.ServiceTypeExternalName), Port("p", tcp, 80, 0)), "", true},
		{"service-proxy-name label, no proxy name configured",
			Service(ns, "l", ClusterIPs("10.96.0.1"), Label(object.LabelServiceProxyName, "other"), Port("p", tcp, 80, 0)), "", true},
		{"service-proxy-name label naming another proxy",
			Service(ns, "l", ClusterIPs("10.96.0.1"), Label(object.LabelServiceProxyName, "other"), Port("p", tcp, 80, 0)), "switchyard", true},
		{"service-proxy-name label naming this proxy",
			Service(ns, "l", ClusterIPs("10.96.0.1"), Label(object.LabelServiceProxyName, "switchyard"), Port("p", tcp, 80, 0)), "switchyard", false},
		{"headless label", Service(ns, "hl", ClusterIPs("10.96.0.1"), Label(object.LabelHeadless, ""), Port("p", tcp, 80, 0)), "", true},
		{"ordinary service", Service(ns, "o", ClusterIPs("10.96.0.1"), Port("p", tcp, 80, 0)), "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := fromAPI(tc.svc, nil, n1, Options{ProxyName: tc.proxyName})
			if (res.Skipped != "") != tc.skipped {
				t.Fatalf("skipped=%q, want skipped=%v", res.Skipped, tc.skipped)
			}
			if tc.skipped && len(res.Ports) != 0 {
				t.Errorf("a skipped service produced %d ports", len(res.Ports))
			}
			if !tc.skipped && len(res.Ports) != 1 {
				t.Errorf("service produced %d ports, want 1", len(res.Ports))
			}
		})
	}
}

func TestSliceSkippedByLabel(t *testing.T) {
	svc := Service(ns, "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0))
	sl := []*discovery.EndpointSlice{
		Slice(ns, "web-1", "web", v4, SlicePort("http", tcp, 8080), Endpoint("10.244.1.5")),
		Slice(ns, "web-2", "web", v4, SliceLabel(object.LabelServiceProxyName, "other"), SlicePort("http", tcp, 8080), Endpoint("10.244.1.6")),
		Slice(ns, "web-3", "web", v4, SliceLabel(object.LabelHeadless, ""), SlicePort("http", tcp, 8080), Endpoint("10.244.1.7")),
	}
	res := fromAPI(svc, sl, n1, Options{})
	if got := summarize(res.Ports[0]).internal; got != "10.244.1.5:8080" {
		t.Errorf("internal = %q, want only the unlabelled slice's endpoint", got)
	}
}

// fromAPI is ServicePorts on API objects, converted as a source would.
func fromAPI(svc *v1.Service, sl []*discovery.EndpointSlice, node graph.Node, opts Options) Result {
	var conv object.Converter
	var in []*object.EndpointSlice
	for _, s := range sl {
		in = append(in, conv.EndpointSlice(s))
	}
	var s *object.Service
	if svc != nil {
		s = conv.Service(svc)
	}
	return ServicePorts(s, in, node, opts)
}
