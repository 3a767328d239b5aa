package dataplanes

import (
	"context"
	"io"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/core/graph"
)

type stubFactory struct{}

func (stubFactory) Description() string                         { return "test" }
func (stubFactory) Capabilities() Capabilities                  { return Capabilities{} }
func (stubFactory) AddFlags(*pflag.FlagSet)                     {}
func (stubFactory) New(context.Context, Env) (Driver, error)    { return nil, nil }
func (stubFactory) Render(io.Writer, Env, graph.Snapshot) error { return nil }

// withEmptyRegistry runs a test against an empty registry and restores it.
func withEmptyRegistry(t *testing.T) {
	t.Helper()
	mu.Lock()
	saved := factories
	factories = map[string]Factory{}
	mu.Unlock()
	t.Cleanup(func() { mu.Lock(); factories = saved; mu.Unlock() })
}

func TestRegistry(t *testing.T) {
	withEmptyRegistry(t)
	if _, err := Get("ovs"); err == nil || !strings.Contains(err.Error(), "no drivers registered") {
		t.Fatalf("empty registry: err = %v", err)
	}
	Register("ovs", stubFactory{})
	Register("hns", stubFactory{})
	if got := Names(); !slices.Equal(got, []string{"hns", "ovs"}) {
		t.Fatalf("Names() = %v", got)
	}
	if f, err := Get("ovs"); err != nil || f == nil {
		t.Fatalf("Get(ovs) = %v, %v", f, err)
	}
	_, err := Get("ebpf")
	if err == nil || err.Error() != `unknown dataplane "ebpf" (known: hns, ovs)` {
		t.Fatalf("unknown: err = %v", err)
	}
}

func TestRegisterRefusesDuplicatesAndBadNames(t *testing.T) {
	withEmptyRegistry(t)
	Register("ovs", stubFactory{})
	cases := []struct {
		name string
		f    Factory
		want string
	}{
		{"ovs", stubFactory{}, `driver "ovs" registered twice`},
		{"OVS", stubFactory{}, "must be lower-case"},
		{"", stubFactory{}, "must be lower-case"},
		{"nil-factory", nil, "nil factory"},
	}
	for _, tc := range cases {
		func() {
			defer func() {
				p := recover()
				if p == nil || !strings.Contains(p.(error).Error(), tc.want) {
					t.Errorf("Register(%q): panic %v, want %q", tc.name, p, tc.want)
				}
			}()
			Register(tc.name, tc.f)
		}()
	}
}

func TestNeedsAndUnhonoured(t *testing.T) {
	sp := &graph.ServicePort{
		Name:                     graph.ServicePortName{Namespace: "ns", Name: "a", Port: "p", Protocol: graph.SCTP},
		ClusterIPs:               []netip.Addr{netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("fd00::1")},
		NodePort:                 30000,
		LoadBalancerIPs:          []netip.Addr{netip.MustParseAddr("203.0.113.1")},
		LoadBalancerSourceRanges: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")},
		SessionAffinity:          graph.SessionAffinity{ClientIP: true, TimeoutSeconds: 60},
		ExternalTrafficPolicy:    graph.PolicyLocal,
		InternalTrafficPolicy:    graph.PolicyCluster,
		UsableFamilies:           graph.FamilySet(0).With(graph.IPv4),
	}
	want := []Capability{IPv4, IPv6, SCTP, NodePort, LoadBalancerIPs, SourceRanges, SessionAffinity, AffinityTimeout,
		ExternalLocal, ShortCircuit, RejectNoEndpoint}
	if got := Needs(sp); !slices.Equal(got, want) {
		t.Fatalf("Needs = %v\nwant    %v", got, want)
	}
	caps := Capabilities{
		Supported: []Capability{IPv4, IPv6, TCP, UDP, NodePort, LoadBalancerIPs, SourceRanges, SessionAffinity,
			ExternalLocal, ShortCircuit, RejectNoEndpoint},
		Gaps: map[Capability]string{AffinityTimeout: "sessions never expire"},
	}
	gaps := Unhonoured(sp, caps)
	if len(gaps) != 2 || gaps[0] != (Gap{SCTP, "not supported by this driver"}) || gaps[1] != (Gap{AffinityTimeout, "sessions never expire"}) {
		t.Fatalf("Unhonoured = %+v", gaps)
	}
}

func TestMixedTargetPortsNeeded(t *testing.T) {
	ep := func(ip string, port uint16) graph.Endpoint {
		return graph.Endpoint{IP: netip.MustParseAddr(ip), Port: port, Ready: true, Serving: true}
	}
	base := graph.ServicePort{
		Name:       graph.ServicePortName{Namespace: "ns", Name: "a", Port: "p", Protocol: graph.TCP},
		ClusterIPs: []netip.Addr{netip.MustParseAddr("10.96.0.1")}, UsableFamilies: graph.FamilySet(0).With(graph.IPv4),
	}
	for _, tc := range []struct {
		name          string
		internal, ext []graph.Endpoint
		want          bool
	}{
		{"one port", []graph.Endpoint{ep("10.0.0.1", 80), ep("10.0.0.2", 80)}, nil, false},
		{"two ports in one list", []graph.Endpoint{ep("10.0.0.1", 80), ep("10.0.0.2", 81)}, nil, true},
		{"two ports across lists", []graph.Endpoint{ep("10.0.0.1", 80)}, []graph.Endpoint{ep("10.0.0.2", 81)}, true},
		{"no endpoints", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := base
			sp.InternalEndpoints, sp.ExternalEndpoints = graph.EndpointListOf(tc.internal...), graph.EndpointListOf(tc.ext...)
			if got := slices.Contains(Needs(&sp), MixedTargetPorts); got != tc.want {
				t.Fatalf("needs mixed-target-ports = %v, want %v", got, tc.want)
			}
		})
	}
}
