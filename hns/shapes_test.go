package hns_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
	v1 "k8s.io/api/core/v1"
)

// want describes one expected load balancer.
type want struct {
	frontend  string // "VIP:port/proto", "0.0.0.0:port/proto" for NodePort
	target    uint16
	flags     uint32
	portFlags uint32
	dist      uint32
	backends  []string
	sourceVIP string
}

func TestLoadBalancerShapesFollowUpstream(t *testing.T) {
	web := func(opts ...ServiceOption) []ServiceOption {
		return append([]ServiceOption{ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0)}, opts...)
	}
	cases := []struct {
		name    string
		build   hnssim.Build
		netType string
		dsr     bool
		svc     []ServiceOption
		eps     []SliceOption // default: two ready local and one ready remote
		want    []want
	}{{
		name: "ClusterIP: VIP, service port -> target port, local and remote backends, node IP as source VIP",
		svc:  web(),
		want: []want{{frontend: "10.96.0.10:80/tcp", target: 8080, backends: []string{"10.244.1.5", "10.244.1.6", "10.244.2.7"}, sourceVIP: "192.168.0.11"}},
	}, {
		name: "NodePort: a load balancer without VIP, VipExternalIP and LocalRoutedVIP",
		svc:  web(Type(v1.ServiceTypeNodePort), func(s *v1.Service) { s.Spec.Ports[0].NodePort = 30080 }),
		want: []want{
			{frontend: "10.96.0.10:80/tcp", target: 8080, backends: []string{"10.244.1.5", "10.244.1.6", "10.244.2.7"}, sourceVIP: "192.168.0.11"},
			{frontend: "0.0.0.0:30080/tcp", target: 8080, portFlags: hns.PortFlagVipExternalIP | hns.PortFlagLocalRoutedVIP,
				backends: []string{"10.244.1.5", "10.244.1.6", "10.244.2.7"}, sourceVIP: "192.168.0.11"},
		},
	}, {
		name: "ExternalIP and LoadBalancer ingress: one load balancer each, VipExternalIP",
		svc:  web(Type(v1.ServiceTypeLoadBalancer), func(s *v1.Service) { s.Spec.Ports[0].NodePort = 30080 }, ExternalIPs("192.0.2.10"), Ingress("203.0.113.10")),
		want: []want{
			{frontend: "10.96.0.10:80/tcp", target: 8080, backends: []string{"10.244.1.5", "10.244.1.6", "10.244.2.7"}, sourceVIP: "192.168.0.11"},
			{frontend: "0.0.0.0:30080/tcp", target: 8080, portFlags: hns.PortFlagVipExternalIP | hns.PortFlagLocalRoutedVIP,
				backends: []string{"10.244.1.5", "10.244.1.6", "10.244.2.7"}, sourceVIP: "192.168.0.11"},
			{frontend: "192.0.2.10:80/tcp", target: 8080, portFlags: hns.PortFlagVipExternalIP, backends: []string{"10.244.1.5", "10.244.1.6", "10.244.2.7"}, sourceVIP: "192.168.0.11"},
			{frontend: "203.0.113.10:80/tcp", target: 8080, portFlags: hns.PortFlagVipExternalIP, backends: []string{"10.244.1.5", "10.244.1.6", "10.244.2.7"}, sourceVIP: "192.168.0.11"},
		},
	}, {
		name: "externalTrafficPolicy=Local: external load balancers are DSR with local backends; ClusterIP keeps all",
		svc:  web(Type(v1.ServiceTypeLoadBalancer), ETPLocal, func(s *v1.Service) { s.Spec.Ports[0].NodePort = 30080 }, Ingress("203.0.113.10")),
		want: []want{
			{frontend: "10.96.0.10:80/tcp", target: 8080, backends: []string{"10.244.1.5", "10.244.1.6", "10.244.2.7"}, sourceVIP: "192.168.0.11"},
			{frontend: "0.0.0.0:30080/tcp", target: 8080, flags: hns.LBFlagDSR, portFlags: hns.PortFlagVipExternalIP | hns.PortFlagLocalRoutedVIP,
				backends: []string{"10.244.1.5", "10.244.1.6"}, sourceVIP: "192.168.0.11"},
			{frontend: "203.0.113.10:80/tcp", target: 8080, flags: hns.LBFlagDSR, portFlags: hns.PortFlagVipExternalIP, backends: []string{"10.244.1.5", "10.244.1.6"}, sourceVIP: "192.168.0.11"},
		},
	}, {
		name: "preserve-destination: ingress is DSR with PreserveDIP and UseMux, local backends only",
		svc:  web(Type(v1.ServiceTypeLoadBalancer), func(s *v1.Service) { s.Spec.Ports[0].NodePort = 30080 }, Ingress("203.0.113.10"), Annotation(hns.AnnotationPreserveDestination, "true")),
		want: []want{
			{frontend: "10.96.0.10:80/tcp", target: 8080, backends: []string{"10.244.1.5", "10.244.1.6", "10.244.2.7"}, sourceVIP: "192.168.0.11"},
			{frontend: "0.0.0.0:30080/tcp", target: 8080, portFlags: hns.PortFlagVipExternalIP | hns.PortFlagLocalRoutedVIP,
				backends: []string{"10.244.1.5", "10.244.1.6"}, sourceVIP: "192.168.0.11"},
			{frontend: "203.0.113.10:80/tcp", target: 8080, flags: hns.LBFlagDSR, portFlags: hns.PortFlagVipExternalIP | hns.PortFlagPreserveDIP | hns.PortFlagUseMux,
				backends: []string{"10.244.1.5", "10.244.1.6"}, sourceVIP: "192.168.0.11"},
		},
	}, {
		name: "internalTrafficPolicy=Local: the ClusterIP load balancer keeps local backends",
		svc:  web(ITPLocal),
		want: []want{{frontend: "10.96.0.10:80/tcp", target: 8080, backends: []string{"10.244.1.5", "10.244.1.6"}, sourceVIP: "192.168.0.11"}},
	}, {
		name: "ClientIP affinity: SourceIP distribution (Windows Server 2022)",
		svc:  web(ClientIPAffinity(600)),
		want: []want{{frontend: "10.96.0.10:80/tcp", target: 8080, dist: hns.DistributionSourceIP, backends: []string{"10.244.1.5", "10.244.1.6", "10.244.2.7"}, sourceVIP: "192.168.0.11"}},
	}, {
		name: "ClientIP affinity on Windows Server 2019: not applied (reported)", build: hnssim.Windows2019,
		svc:  web(ClientIPAffinity(600)),
		want: []want{{frontend: "10.96.0.10:80/tcp", target: 8080, backends: []string{"10.244.1.5", "10.244.1.6", "10.244.2.7"}, sourceVIP: "192.168.0.11"}},
	}, {
		name: "--hns-enable-dsr: the ClusterIP load balancer is DSR", dsr: true,
		svc:  web(),
		want: []want{{frontend: "10.96.0.10:80/tcp", target: 8080, flags: hns.LBFlagDSR, backends: []string{"10.244.1.5", "10.244.1.6", "10.244.2.7"}, sourceVIP: "192.168.0.11"}},
	}, {
		name:    "overlay: the source VIP flag",
		netType: "Overlay",
		svc:     web(),
		want:    []want{{frontend: "10.96.0.10:80/tcp", target: 8080, backends: []string{"10.244.1.5", "10.244.1.6", "10.244.2.7"}, sourceVIP: "10.244.1.254"}},
	}, {
		// Upstream winkernel falls back to terminating endpoints only for
		// ingress load balancers; the graph does it for every frontend.
		name: "terminating fallback on every frontend (upstream: ingress only)",
		svc:  web(Type(v1.ServiceTypeNodePort), ETPLocal, func(s *v1.Service) { s.Spec.Ports[0].NodePort = 30080 }),
		eps: []SliceOption{Endpoint("10.244.1.5", OnNode("node-1"), Terminating), Endpoint("10.244.1.6", OnNode("node-1"), NotReady),
			Endpoint("10.244.2.7", OnNode("node-2"), Terminating)},
		want: []want{
			{frontend: "10.96.0.10:80/tcp", target: 8080, backends: []string{"10.244.1.5", "10.244.2.7"}, sourceVIP: "192.168.0.11"},
			{frontend: "0.0.0.0:30080/tcp", target: 8080, flags: hns.LBFlagDSR, portFlags: hns.PortFlagVipExternalIP | hns.PortFlagLocalRoutedVIP,
				backends: []string{"10.244.1.5"}, sourceVIP: "192.168.0.11"},
		},
	}, {
		name: "terminating endpoints are not used while a ready one exists",
		svc:  web(),
		eps:  []SliceOption{Endpoint("10.244.1.5", OnNode("node-1"), Terminating), Endpoint("10.244.2.7", OnNode("node-2"))},
		want: []want{{frontend: "10.96.0.10:80/tcp", target: 8080, backends: []string{"10.244.2.7"}, sourceVIP: "192.168.0.11"}},
	}, {
		// Upstream winkernel ignores topology; the graph applies zone hints.
		name: "topology: zone hints keep this zone's endpoints (upstream: ignored)",
		svc:  web(),
		eps: []SliceOption{Endpoint("10.244.1.5", OnNode("node-1"), ZoneHints("zone-a")), Endpoint("10.244.1.6", OnNode("node-1"), ZoneHints("zone-b")),
			Endpoint("10.244.2.7", OnNode("node-2"), ZoneHints("zone-a"))},
		want: []want{{frontend: "10.96.0.10:80/tcp", target: 8080, backends: []string{"10.244.1.5", "10.244.2.7"}, sourceVIP: "192.168.0.11"}},
	}, {
		name: "no usable endpoints: no load balancer (HNS cannot reject)",
		svc:  web(),
		eps:  []SliceOption{Endpoint("10.244.1.5", OnNode("node-1"), NotReady)},
		want: nil,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			build, netType := tc.build, tc.netType
			if build == 0 {
				build = hnssim.Windows2022
			}
			if netType == "" {
				netType = "L2Bridge"
			}
			w := newWorld(t, build, netType)
			w.opts.EnableDSR = tc.dsr
			w.start()
			w.tr.UpsertService(object.ServiceOf(Service("ns", "web", tc.svc...)))
			eps := tc.eps
			if eps == nil {
				eps = []SliceOption{local("10.244.1.5"), local("10.244.1.6"), remote("10.244.2.7")}
			}
			w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, append([]SliceOption{SlicePort("http", tcp, 8080)}, eps...)...)))
			w.mustSync()
			got := w.lbs()
			if len(got) != len(tc.want) {
				t.Fatalf("%d load balancers, want %d: %v", len(got), len(tc.want), keys(got))
			}
			for _, wl := range tc.want {
				lb, ok := got[wl.frontend]
				if !ok {
					t.Fatalf("no load balancer for %s (have %v)", wl.frontend, keys(got))
				}
				pm := lb.PortMappings[0]
				if pm.InternalPort != wl.target || lb.Flags != wl.flags || pm.Flags != wl.portFlags || pm.DistributionType != wl.dist ||
					lb.SourceVIP != wl.sourceVIP || lb.SchemaVersion != hns.V2 {
					t.Errorf("%s: target %d flags %d portFlags %d dist %d sourceVIP %q; want %d %d %d %d %q",
						wl.frontend, pm.InternalPort, lb.Flags, pm.Flags, pm.DistributionType, lb.SourceVIP,
						wl.target, wl.flags, wl.portFlags, wl.dist, wl.sourceVIP)
				}
				if b := w.backends(lb); !slices.Equal(b, wl.backends) {
					t.Errorf("%s: backends %v, want %v", wl.frontend, b, wl.backends)
				}
			}
		})
	}
}

func keys(m map[string]hns.LoadBalancer) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestRemoteEndpoints(t *testing.T) {
	t.Run("overlay: a ProviderAddress policy naming the backend's node", func(t *testing.T) {
		w := newWorld(t, hnssim.Windows2022, "Overlay")
		w.tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0))))
		w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), remote("10.244.2.7"))))
		w.mustSync()
		ep := w.remoteEndpoint("10.244.2.7")
		if ep.Flags != hns.EndpointFlagRemote || ep.MacAddress != "02-11-0a-f4-02-07" || !strings.HasPrefix(ep.Name, hns.RemotePrefix) {
			t.Fatalf("remote endpoint %+v", ep)
		}
		if len(ep.Policies) != 1 || ep.Policies[0].Type != "ProviderAddress" {
			t.Fatalf("policies %+v", ep.Policies)
		}
		var s hns.ProviderAddressSettings
		json.Unmarshal(ep.Policies[0].Settings, &s)
		if s.ProviderAddress != node2.String() {
			t.Fatalf("provider address %q, want %s", s.ProviderAddress, node2)
		}
	})
	t.Run("l2bridge: no provider address", func(t *testing.T) {
		w := newWorld(t, hnssim.Windows2022, "L2Bridge")
		w.tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0))))
		w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), remote("10.244.2.7"))))
		w.mustSync()
		if ep := w.remoteEndpoint("10.244.2.7"); len(ep.Policies) != 0 {
			t.Fatalf("policies %+v", ep.Policies)
		}
	})
	t.Run("shared by services, deleted with the last user", func(t *testing.T) {
		w := newWorld(t, hnssim.Windows2022, "L2Bridge")
		for _, n := range []string{"a", "b"} {
			w.tr.UpsertService(object.ServiceOf(Service("ns", n, ClusterIPs(map[string]string{"a": "10.96.0.1", "b": "10.96.0.2"}[n]), Port("http", tcp, 80, 0))))
			w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", n+"-1", n, v4, SlicePort("http", tcp, 8080), remote("10.244.2.7"))))
		}
		w.mustSync()
		if n := w.remoteCount(); n != 1 {
			t.Fatalf("%d remote endpoints for one backend shared by two services", n)
		}
		w.tr.DeleteService("ns", "a")
		w.mustApply()
		if n := w.remoteCount(); n != 1 {
			t.Fatalf("the shared remote endpoint went with its first user (%d left)", n)
		}
		w.tr.DeleteService("ns", "b")
		w.mustApply()
		if n := w.remoteCount(); n != 0 {
			t.Fatalf("%d remote endpoints left after the last user went", n)
		}
	})
}

func (w *world) remoteEndpoint(ip string) hns.Endpoint {
	w.t.Helper()
	eps, _ := w.sim.Endpoints(w.networkID())
	for _, e := range eps {
		if e.IPConfigurations[0].IPAddress == ip && e.Flags&hns.EndpointFlagRemote != 0 {
			return e
		}
	}
	w.t.Fatalf("no remote endpoint for %s", ip)
	return hns.Endpoint{}
}

func (w *world) remoteCount() int {
	eps, _ := w.sim.Endpoints(w.networkID())
	n := 0
	for _, e := range eps {
		if e.Flags&hns.EndpointFlagRemote != 0 {
			n++
		}
	}
	return n
}
