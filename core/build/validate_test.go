package build

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	. "github.com/switchyard-proxy/switchyard/core/testobj"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

func TestRejections(t *testing.T) {
	web := func(opts ...ServiceOption) *v1.Service {
		return Service(ns, "web", append([]ServiceOption{ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0)}, opts...)...)
	}
	goodSlice := func(opts ...SliceOption) *discovery.EndpointSlice {
		return Slice(ns, "web-1", "web", v4, append([]SliceOption{SlicePort("http", tcp, 8080), Endpoint("10.244.1.5")}, opts...)...)
	}
	cases := []struct {
		name     string
		svc      *v1.Service
		slices   []*discovery.EndpointSlice
		opts     Options
		reasons  []Reason
		ports    int    // service ports still produced
		internal string // internal endpoints of the first port
	}{{
		name:    "invalid endpoint IP drops that endpoint only",
		svc:     web(),
		slices:  []*discovery.EndpointSlice{goodSlice(Endpoint("10.244.1.300"), Endpoint("bogus"))},
		reasons: []Reason{ReasonInvalidIP, ReasonInvalidIP}, ports: 1, internal: "10.244.1.5:8080",
	}, {
		name: "loopback, link-local and unspecified endpoint IPs are refused",
		svc:  web(),
		slices: []*discovery.EndpointSlice{goodSlice(Endpoint("127.0.0.1"), Endpoint("169.254.1.1"),
			Endpoint("0.0.0.0"), Endpoint("224.0.0.5"))},
		reasons: []Reason{ReasonForbiddenIP, ReasonForbiddenIP, ReasonForbiddenIP, ReasonForbiddenIP},
		ports:   1, internal: "10.244.1.5:8080",
	}, {
		name:    "IPv6 address in an IPv4 slice",
		svc:     web(),
		slices:  []*discovery.EndpointSlice{goodSlice(Endpoint("fd00::5"))},
		reasons: []Reason{ReasonIPFamilyMismatch}, ports: 1, internal: "10.244.1.5:8080",
	}, {
		name:    "IPv4 with leading zeros is read as decimal, like kube-proxy's ParseIPSloppy",
		svc:     web(),
		slices:  []*discovery.EndpointSlice{Slice(ns, "web-1", "web", v4, SlicePort("http", tcp, 8080), Endpoint("010.244.001.005"))},
		reasons: nil, ports: 1, internal: "10.244.1.5:8080",
	}, {
		name:    "endpoint without address",
		svc:     web(),
		slices:  []*discovery.EndpointSlice{goodSlice(func(s *discovery.EndpointSlice) { s.Endpoints = append(s.Endpoints, discovery.Endpoint{}) })},
		reasons: []Reason{ReasonMissingAddress}, ports: 1, internal: "10.244.1.5:8080",
	}, {
		name: "slice ports 0 and 65536 are refused, the valid port still matches",
		svc:  web(),
		slices: []*discovery.EndpointSlice{goodSlice(func(s *discovery.EndpointSlice) {
			s.Ports = append(s.Ports, discovery.EndpointPort{Name: ptr.To("http"), Port: ptr.To(int32(0))},
				discovery.EndpointPort{Name: ptr.To("http"), Port: ptr.To(int32(65536))})
		})},
		reasons: []Reason{ReasonInvalidPort, ReasonInvalidPort}, ports: 1, internal: "10.244.1.5:8080",
	}, {
		name: "slice port with unknown protocol or nil name",
		svc:  web(),
		slices: []*discovery.EndpointSlice{goodSlice(func(s *discovery.EndpointSlice) {
			s.Ports = append(s.Ports, discovery.EndpointPort{Name: ptr.To("http"), Port: ptr.To(int32(1)), Protocol: ptr.To(v1.Protocol("QUIC"))},
				discovery.EndpointPort{Port: ptr.To(int32(2))})
		})},
		reasons: []Reason{ReasonUnknownProtocol, ReasonMissingPortName}, ports: 1, internal: "10.244.1.5:8080",
	}, {
		name: "slice port without protocol defaults to TCP",
		svc:  web(),
		slices: []*discovery.EndpointSlice{Slice(ns, "web-1", "web", v4, func(s *discovery.EndpointSlice) {
			s.Ports = []discovery.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080))}}
		}, Endpoint("10.244.1.5"))},
		reasons: nil, ports: 1, internal: "10.244.1.5:8080",
	}, {
		name:    "FQDN slice is refused as a whole",
		svc:     web(),
		slices:  []*discovery.EndpointSlice{goodSlice(), Slice(ns, "web-fqdn", "web", discovery.AddressTypeFQDN, SlicePort("http", tcp, 8080), Endpoint("db.example.com"))},
		reasons: []Reason{ReasonUnsupportedAddress}, ports: 1, internal: "10.244.1.5:8080",
	}, {
		name:    "unparsable ClusterIP: the service is not proxied",
		svc:     Service(ns, "web", ClusterIPs("10.96.0.999"), Port("http", tcp, 80, 0)),
		slices:  []*discovery.EndpointSlice{goodSlice()},
		reasons: []Reason{ReasonInvalidIP, ReasonNoClusterIP}, ports: 0,
	}, {
		name:    "second ClusterIP of the same family is ignored",
		svc:     Service(ns, "web", ClusterIPs("10.96.0.10", "10.96.0.11"), Port("http", tcp, 80, 0)),
		slices:  []*discovery.EndpointSlice{goodSlice()},
		reasons: []Reason{ReasonDuplicateFamily}, ports: 1, internal: "10.244.1.5:8080",
	}, {
		name:    "duplicate service ports: the later one is ignored",
		svc:     web(Port("http", tcp, 81, 0), Port("other", tcp, 80, 0), Port("udp", udp, 80, 0)),
		slices:  []*discovery.EndpointSlice{goodSlice()},
		reasons: []Reason{ReasonDuplicatePort, ReasonDuplicatePort}, ports: 2, internal: "10.244.1.5:8080",
	}, {
		name:    "unknown service protocol and out-of-range service port",
		svc:     web(Port("q", "QUIC", 443, 0), Port("big", tcp, 70000, 0)),
		slices:  []*discovery.EndpointSlice{goodSlice()},
		reasons: []Reason{ReasonUnknownProtocol, ReasonInvalidPort}, ports: 1, internal: "10.244.1.5:8080",
	}, {
		name:    "NodePort outside the configured range is not opened",
		svc:     Service(ns, "web", ClusterIPs("10.96.0.10"), Type(v1.ServiceTypeNodePort), Port("http", tcp, 80, 8080)),
		slices:  []*discovery.EndpointSlice{goodSlice()},
		opts:    Options{NodePortRange: DefaultNodePortRange},
		reasons: []Reason{ReasonNodePortOutOfRange}, ports: 1, internal: "10.244.1.5:8080",
	}, {
		name:    "invalid externalIP, LB ingress and source range",
		svc:     web(ExternalIPs("192.0.2.300"), Ingress("nope"), SourceRanges("10.0.0.0/33")),
		slices:  []*discovery.EndpointSlice{goodSlice()},
		reasons: []Reason{ReasonInvalidIP, ReasonInvalidIP, ReasonInvalidCIDR}, ports: 1, internal: "10.244.1.5:8080",
	}, {
		name:    "externalIP of a family the service does not serve",
		svc:     web(ExternalIPs("2001:db8::1")),
		slices:  []*discovery.EndpointSlice{goodSlice()},
		reasons: []Reason{ReasonIPFamilyMismatch}, ports: 1, internal: "10.244.1.5:8080",
	}, {
		name:    "affinity timeout beyond one day falls back to the default",
		svc:     web(ClientIPAffinity(90000)),
		slices:  []*discovery.EndpointSlice{goodSlice()},
		reasons: []Reason{ReasonInvalidAffinity}, ports: 1, internal: "10.244.1.5:8080",
	}, {
		name:    "the API server's address as an external or load-balancer IP is refused, the rest proxied",
		svc:     web(ExternalIPs("192.0.2.10", "203.0.113.7"), Ingress("192.0.2.10")),
		slices:  []*discovery.EndpointSlice{goodSlice()},
		opts:    Options{ProtectedIPs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}},
		reasons: []Reason{ReasonProtectedIP, ReasonProtectedIP}, ports: 1, internal: "10.244.1.5:8080",
	}, {
		name:    "service without a name",
		svc:     Service(ns, "", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0)),
		reasons: []Reason{ReasonMissingName}, ports: 0,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := fromAPI(tc.svc, tc.slices, n1, tc.opts)
			var got []Reason
			for _, r := range res.Rejections {
				got = append(got, r.Reason)
				if r.Message == "" || r.Object.Kind == "" {
					t.Errorf("rejection without object or message: %+v", r)
				}
			}
			slices.Sort(got)
			want := slices.Clone(tc.reasons)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("reasons = %v, want %v\n%v", got, want, res.Rejections)
			}
			if len(res.Ports) != tc.ports {
				t.Fatalf("ports = %d, want %d", len(res.Ports), tc.ports)
			}
			if tc.ports > 0 {
				if g := summarize(res.Ports[0]).internal; g != tc.internal {
					t.Errorf("internal = %q, want %q", g, tc.internal)
				}
			}
		})
	}
}

func TestUnknownAffinityType(t *testing.T) {
	svc := Service(ns, "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0))
	svc.Spec.SessionAffinity = "Sticky"
	res := fromAPI(svc, nil, n1, Options{})
	if len(res.Rejections) != 1 || res.Rejections[0].Reason != ReasonInvalidAffinity {
		t.Fatalf("rejections = %v", res.Rejections)
	}
	if res.Ports[0].SessionAffinity.ClientIP {
		t.Error("unknown affinity must be treated as None")
	}
}

func TestParsePortRange(t *testing.T) {
	cases := []struct {
		in      string
		want    PortRange
		wantErr bool
	}{
		{"", PortRange{}, false},
		{"30000-32767", PortRange{30000, 32767}, false},
		{"1-65535", PortRange{1, 65535}, false},
		{"0-10", PortRange{}, true},
		{"10-5", PortRange{}, true},
		{"abc", PortRange{}, true},
		{"1-70000", PortRange{}, true},
	}
	for _, tc := range cases {
		got, err := ParsePortRange(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParsePortRange(%q) = %v, %v; want %v, err=%v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestProtectedIPsAreNeverFrontends: the API server's address, named as
// an external or load-balancer IP, is in no frontend of the Service; its
// other external IP is.
func TestProtectedIPsAreNeverFrontends(t *testing.T) {
	svc := Service(ns, "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0), ExternalIPs("192.0.2.10", "203.0.113.7"), Ingress("192.0.2.10"))
	res := fromAPI(svc, nil, n1, Options{ProtectedIPs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}})
	if len(res.Ports) != 1 {
		t.Fatalf("%d ports", len(res.Ports))
	}
	sp := res.Ports[0]
	if fmt.Sprint(sp.ExternalIPs) != "[203.0.113.7]" || len(sp.LoadBalancerIPs) != 0 {
		t.Errorf("external IPs %v, load-balancer IPs %v: want [203.0.113.7] and none", sp.ExternalIPs, sp.LoadBalancerIPs)
	}
}
