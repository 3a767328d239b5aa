package hns_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
	v1 "k8s.io/api/core/v1"
)

func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		build    hnssim.Build
		backends int    // programmed
		refused  string // what the driver reports
	}{
		{hnssim.Windows2022, 71, ""},
		{hnssim.Windows2019, 64, "refused a load balancer with 71 endpoints"},
	} {
		t.Run(fmt.Sprintf("71 backends on build %d: %d programmed", tc.build, tc.backends), func(t *testing.T) {
			w := newWorld(t, tc.build, "L2Bridge")
			var log problemLog
			w.env.Problems = &log
			w.start()
			opts := []SliceOption{SlicePort("http", tcp, 8080), local("10.244.1.5")}
			for i := range 70 {
				opts = append(opts, remote(fmt.Sprintf("10.244.2.%d", i+10)))
			}
			w.tr.UpsertService(object.ServiceOf(Service("ns", "big", ClusterIPs("10.96.0.50"), Port("http", tcp, 80, 0))))
			w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "big-1", "big", v4, opts...)))
			w.mustSync()
			b := w.backends(w.lbs()["10.96.0.50:80/tcp"])
			if len(b) != tc.backends || !slices.Contains(b, "10.244.1.5") {
				t.Fatalf("%d backends (this node's among them: %v), want %d", len(b), slices.Contains(b, "10.244.1.5"), tc.backends)
			}
			said := ""
			for _, p := range log.got {
				said += p.Message + "\n"
			}
			if (tc.refused == "") != (said == "") || !strings.Contains(said, tc.refused) {
				t.Fatalf("reported %q, want %q", said, tc.refused)
			}
			// The refusal is remembered: another change (a programmed
			// backend gone) sends 64 at once.
			w.sim.ResetCalls()
			w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "big-1", "big", v4, slices.Delete(slices.Clone(opts), 2, 3)...)))
			if err := w.apply(); err != nil {
				t.Fatal(err)
			}
			if c := w.sim.Calls(); tc.refused != "" && c["CreateLoadBalancer"]+c["UpdateLoadBalancer"] != 1 {
				t.Fatalf("calls after the refusal was learnt: %v", c)
			}
		})
	}
	t.Run("endpoints with different target ports: the most common port", func(t *testing.T) {
		w := newWorld(t, hnssim.Windows2022, "L2Bridge")
		w.tr.UpsertService(object.ServiceOf(Service("ns", "mixed", ClusterIPs("10.96.0.51"), Port("http", tcp, 80, 0))))
		w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "m-1", "mixed", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"), remote("10.244.2.7"))))
		w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "m-2", "mixed", v4, SlicePort("http", tcp, 9090), local("10.244.1.6"))))
		w.mustSync()
		lb := w.lbs()["10.96.0.51:80/tcp"]
		if lb.PortMappings[0].InternalPort != 8080 || strings.Join(w.backends(lb), ",") != "10.244.1.5,10.244.2.7" {
			t.Fatalf("port %d backends %v", lb.PortMappings[0].InternalPort, w.backends(lb))
		}
	})
	t.Run("IPv6 on Windows Server 2019 is not programmed; IPv4 still is", func(t *testing.T) {
		w := newWorld(t, hnssim.Windows2019, "L2Bridge")
		w.tr.UpsertService(object.ServiceOf(Service("ns", "ds", ClusterIPs("10.96.0.52", "fd00:96::52"), Port("http", tcp, 80, 0))))
		w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "ds-4", "ds", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"))))
		w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "ds-6", "ds", v6, SlicePort("http", tcp, 8080), local("fd00:244:1::5"))))
		w.mustSync()
		if got := keys(w.lbs()); len(got) != 1 || got[0] != "10.96.0.52:80/tcp" {
			t.Fatalf("load balancers %v", got)
		}
	})
	t.Run("IPv6 on Windows Server 2022 carries the IPv6 flag", func(t *testing.T) {
		w := newWorld(t, hnssim.Windows2022, "L2Bridge")
		w.tr.UpsertService(object.ServiceOf(Service("ns", "ds", ClusterIPs("10.96.0.52", "fd00:96::52"), Port("http", tcp, 80, 0))))
		w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "ds-6", "ds", v6, SlicePort("http", tcp, 8080), local("fd00:244:1::5"))))
		w.mustSync()
		lb, ok := w.lbs()["[fd00:96::52]:80/tcp"]
		if !ok || lb.Flags != hns.LBFlagIPv6 {
			t.Fatalf("IPv6 load balancer %+v (have %v)", lb, keys(w.lbs()))
		}
	})
}

func TestEvaluator(t *testing.T) {
	w := newWorld(t, hnssim.Windows2022, "L2Bridge")
	w.tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Type(v1.ServiceTypeLoadBalancer), Port("http", tcp, 80, 30080),
		Ingress("203.0.113.10"), Annotation(hns.AnnotationPreserveDestination, "true"))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"), local("10.244.1.6"), remote("10.244.2.7"))))
	w.tr.UpsertService(object.ServiceOf(Service("ns", "sticky", ClusterIPs("10.96.0.20"), ClientIPAffinity(60), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "sticky-1", "sticky", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"), local("10.244.1.6"), remote("10.244.2.7"))))
	w.mustSync()
	pod := netip.MustParseAddr("10.244.1.9")
	client := netip.MustParseAddr("198.51.100.5")
	eval := func(from hnssim.SourceKind, src netip.Addr, dst string, conn uint64) hnssim.Verdict {
		return w.sim.Evaluate(hnssim.Packet{From: from, Src: src, Dst: netip.MustParseAddrPort(dst), Protocol: 6, Conn: conn})
	}
	seen := map[string]bool{}
	for c := range uint64(40) {
		v := eval(hnssim.FromPod, pod, "10.96.0.10:80", c)
		if !v.Balanced || v.Backend.Port() != 8080 {
			t.Fatalf("ClusterIP: %+v", v)
		}
		seen[v.Backend.Addr().String()] = true
	}
	if len(seen) != 3 {
		t.Fatalf("40 connections reached %v", seen)
	}
	first := eval(hnssim.FromPod, pod, "10.96.0.20:80", 0)
	for c := range uint64(20) {
		if v := eval(hnssim.FromPod, pod, "10.96.0.20:80", c); v.Backend != first.Backend {
			t.Fatalf("affinity: connection %d went to %v, first to %v", c, v.Backend, first.Backend)
		}
	}
	if v := eval(hnssim.FromExternal, client, "203.0.113.10:80", 1); !v.Balanced || !v.DSR || v.DstSeen.String() != "203.0.113.10" {
		t.Fatalf("preserve-destination ingress: %+v", v)
	}
	if v := eval(hnssim.FromExternal, client, nodeIP.String()+":30080", 1); !v.Balanced {
		t.Fatalf("NodePort from outside: %+v", v)
	}
	// The NodePort load balancer carries LocalRoutedVIP, which "enables VIP
	// access from the host" (hcn's comment): the node reaches its own
	// NodePort (the Kubernetes Windows page's older limitation says
	// otherwise; hns/hnssim/rules.go says which the simulator follows).
	if v := eval(hnssim.FromNode, nodeIP, nodeIP.String()+":30080", 1); !v.Balanced {
		t.Fatalf("NodePort from the node itself, with LocalRoutedVIP: %+v", v)
	}
	if v := eval(hnssim.FromPod, pod, "10.96.0.99:80", 1); v.Balanced {
		t.Fatalf("a frontend without a load balancer: %+v", v)
	}
}

func (w *world) localID(ip string) string {
	w.t.Helper()
	eps, _ := w.sim.Endpoints(w.networkID())
	for _, e := range eps {
		if e.IPConfigurations[0].IPAddress == ip && e.Flags&hns.EndpointFlagRemote == 0 {
			return e.ID
		}
	}
	w.t.Fatalf("no local endpoint %s", ip)
	return ""
}
