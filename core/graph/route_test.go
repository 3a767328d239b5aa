package graph

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// What a snapshot does with a connection, by frontend kind, origin and
// endpoints.
func TestRoutes(t *testing.T) {
	a := netip.MustParseAddr
	ep := func(ip string, local bool) Endpoint {
		return Endpoint{IP: a(ip), Port: 8080, Ready: true, Serving: true, Local: local}
	}
	here, there := ep("10.244.1.5", true), ep("10.244.2.5", false)
	v6 := ep("fd00:244::5", true)
	lb := &ServicePort{Name: ServicePortName{Namespace: "ns", Name: "lb", Protocol: TCP},
		ClusterIPs: []netip.Addr{a("10.96.0.10"), a("fd00:96::10")}, Port: 80, NodePort: 30080,
		ExternalIPs: []netip.Addr{a("192.0.2.10")}, LoadBalancerIPs: []netip.Addr{a("198.51.100.7"), a("2001:db8::7")},
		LoadBalancerSourceRanges: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")},
		ExternalTrafficPolicy:    PolicyLocal, UsableFamilies: FamilySet(0).With(IPv4).With(IPv6),
		InternalEndpoints: EndpointListOf(here, there, v6), ExternalEndpoints: EndpointListOf(here, v6),
		ShortCircuitEndpoints: EndpointListOf(here, there, v6)}
	empty := &ServicePort{Name: ServicePortName{Namespace: "ns", Name: "empty", Protocol: TCP},
		ClusterIPs: []netip.Addr{a("10.96.0.11")}, Port: 80}
	gone := &ServicePort{Name: ServicePortName{Namespace: "ns", Name: "elsewhere", Protocol: TCP},
		ClusterIPs: []netip.Addr{a("10.96.0.12")}, Port: 80, InternalTrafficPolicy: PolicyLocal,
		UsableFamilies: FamilySet(0).With(IPv4)}
	s := Snapshot{Node: Node{Name: "node-1", IPs: []netip.Addr{a("192.168.0.10")}}, ServicePorts: []*ServicePort{lb, empty, gone}}
	outside, pod := a("203.0.113.9"), a("10.244.1.9")
	type want struct {
		Name     string
		Frontend FrontendKind
		List     ListKind
		Eps      []string
		Action   RouteAction
	}
	for _, tc := range []struct {
		name string
		c    Connection
		want []want
	}{
		{"ClusterIP: the internal list", Connection{Src: pod, Dst: a("10.96.0.10"), Port: 80, Protocol: TCP, FromThisNode: true},
			[]want{{"ns/lb:/TCP", FrontendClusterIP, ListInternal, []string{"10.244.1.5:8080", "10.244.2.5:8080"}, Forward}}},
		{"the IPv6 ClusterIP: its family's endpoints", Connection{Src: a("fd00:244::9"), Dst: a("fd00:96::10"), Port: 80, Protocol: TCP},
			[]want{{"ns/lb:/TCP", FrontendClusterIP, ListInternal, []string{"[fd00:244::5]:8080"}, Forward}}},
		{"NodePort from outside, ETP Local: the local endpoints", Connection{Src: outside, Dst: a("192.168.0.10"), Port: 30080, Protocol: TCP},
			[]want{{"ns/lb:/TCP", FrontendNodePort, ListExternal, []string{"10.244.1.5:8080"}, Forward}}},
		{"external IP from a pod here, ETP Local: short-circuits to every endpoint", Connection{Src: pod, Dst: a("192.0.2.10"), Port: 80, Protocol: TCP, FromThisNode: true},
			[]want{{"ns/lb:/TCP", FrontendExternalIP, ListShortCircuit, []string{"10.244.1.5:8080", "10.244.2.5:8080"}, Forward}}},
		{"LB IP from an allowed range", Connection{Src: outside, Dst: a("198.51.100.7"), Port: 80, Protocol: TCP},
			[]want{{"ns/lb:/TCP", FrontendLoadBalancer, ListExternal, []string{"10.244.1.5:8080"}, Forward}}},
		{"LB IP from outside the ranges: dropped", Connection{Src: a("192.0.2.99"), Dst: a("198.51.100.7"), Port: 80, Protocol: TCP},
			[]want{{"ns/lb:/TCP", FrontendLoadBalancer, ListExternal, []string{"10.244.1.5:8080"}, DropSourceRange}}},
		{"the IPv6 LB IP has no range of its family: open", Connection{Src: a("2001:db8:9::1"), Dst: a("2001:db8::7"), Port: 80, Protocol: TCP},
			[]want{{"ns/lb:/TCP", FrontendLoadBalancer, ListExternal, []string{"[fd00:244::5]:8080"}, Forward}}},
		{"no endpoint anywhere: reject", Connection{Src: pod, Dst: a("10.96.0.11"), Port: 80, Protocol: TCP},
			[]want{{"ns/empty:/TCP", FrontendClusterIP, ListInternal, nil, RejectNoEndpoint}}},
		{"endpoints elsewhere only, ITP Local: drop", Connection{Src: pod, Dst: a("10.96.0.12"), Port: 80, Protocol: TCP},
			[]want{{"ns/elsewhere:/TCP", FrontendClusterIP, ListInternal, nil, DropNoEndpoint}}},
		{"another port or protocol: no route", Connection{Src: pod, Dst: a("10.96.0.10"), Port: 81, Protocol: TCP}, nil},
		{"UDP to a TCP port: no route", Connection{Src: pod, Dst: a("10.96.0.10"), Port: 80, Protocol: UDP}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []want
			for _, r := range s.Routes(tc.c) {
				w := want{Name: r.ServicePort.Name.String(), Frontend: r.Frontend, List: r.List, Action: r.Action}
				for _, e := range r.Endpoints {
					w.Eps = append(w.Eps, e.String())
				}
				got = append(got, w)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
