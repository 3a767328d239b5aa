package hns_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
	v1 "k8s.io/api/core/v1"
)

// lbCalls counts the calls that change load balancers or endpoints.
func lbCalls(c map[string]int) map[string]int {
	out := map[string]int{}
	for _, op := range []string{"CreateLoadBalancer", "UpdateLoadBalancer", "DeleteLoadBalancer", "CreateEndpoint", "DeleteEndpoint"} {
		if c[op] > 0 {
			out[op] = c[op]
		}
	}
	return out
}

func twoServices(w *world) {
	w.tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Type(v1.ServiceTypeNodePort), Port("http", tcp, 80, 30080))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"), remote("10.244.2.7"))))
	w.tr.UpsertService(object.ServiceOf(Service("ns", "other", ClusterIPs("10.96.0.11"), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "other-1", "other", v4, SlicePort("http", tcp, 8080), local("10.244.1.6"))))
}

func TestOneEndpointChangeCalls(t *testing.T) {
	cases := []struct {
		build hnssim.Build
		want  map[string]int
	}{
		// ModifyLoadBalancer: one call per load balancer the endpoint is in
		// (ClusterIP and NodePort).
		{hnssim.Windows2025, map[string]int{"UpdateLoadBalancer": 2}},
		// Without it: delete and create each.
		{hnssim.Windows2022, map[string]int{"DeleteLoadBalancer": 2, "CreateLoadBalancer": 2}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.build), func(t *testing.T) {
			w := newWorld(t, tc.build, "L2Bridge")
			twoServices(w)
			w.mustSync()
			w.sim.ResetCalls()
			w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"), local("10.244.1.6"), remote("10.244.2.7"))))
			w.mustApply()
			got := lbCalls(w.sim.Calls())
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("calls %v, want %v", got, tc.want)
			}
			if b := w.backends(w.lbs()["10.96.0.10:80/tcp"]); strings.Join(b, ",") != "10.244.1.5,10.244.1.6,10.244.2.7" {
				t.Fatalf("backends %v", b)
			}
		})
	}
	t.Run("ClusterIP only: exactly one call on Windows Server 2025", func(t *testing.T) {
		w := newWorld(t, hnssim.Windows2025, "L2Bridge")
		twoServices(w)
		w.mustSync()
		w.sim.ResetCalls()
		w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "other-1", "other", v4, SlicePort("http", tcp, 8080), local("10.244.1.6"), local("10.244.1.5"))))
		w.mustApply()
		if got := w.sim.Calls(); got["UpdateLoadBalancer"] != 1 || len(lbCalls(got)) != 1 {
			t.Fatalf("calls %v, want one UpdateLoadBalancer", got)
		}
	})
}

func TestRestartAdoptsWithoutCalls(t *testing.T) {
	w := newWorld(t, hnssim.Windows2022, "Overlay")
	twoServices(w)
	w.mustSync()
	before := w.sim.LoadBalancerCount()
	w.sim.ResetCalls()
	w.start() // a restarted switchyard, same HNS and state file
	w.mustSync()
	if got := lbCalls(w.sim.Calls()); len(got) != 0 {
		t.Fatalf("a restart with nothing changed made %v", got)
	}
	if w.sim.LoadBalancerCount() != before {
		t.Fatalf("%d load balancers after the restart, %d before", w.sim.LoadBalancerCount(), before)
	}
	// A change after the restart modifies what was adopted.
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "other-1", "other", v4, SlicePort("http", tcp, 8080), local("10.244.1.6"), local("10.244.1.5"))))
	w.mustApply()
	if w.sim.LoadBalancerCount() != before {
		t.Fatalf("%d load balancers after a change, %d before: the adopted one was duplicated", w.sim.LoadBalancerCount(), before)
	}
}

func TestForeignObjectsAreNeverTouched(t *testing.T) {
	w := newWorld(t, hnssim.Windows2022, "L2Bridge")
	p1 := w.localID("10.244.1.5")
	foreign, err := w.sim.CreateLoadBalancer(&hns.LoadBalancer{FrontendVIPs: []string{"10.96.99.99"}, HostComputeEndpoints: []string{p1},
		PortMappings: []hns.PortMapping{{Protocol: 6, InternalPort: 80, ExternalPort: 80}}, SchemaVersion: hns.V2})
	if err != nil {
		t.Fatal(err)
	}
	// A service whose frontend collides with the foreign load balancer, and
	// one that does not.
	w.tr.UpsertService(object.ServiceOf(Service("ns", "clash", ClusterIPs("10.96.99.99"), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "clash-1", "clash", v4, SlicePort("http", tcp, 8080), local("10.244.1.6"))))
	twoServices(w)
	err = w.sync()
	var degraded *dataplanes.Degraded
	if !errors.As(err, &degraded) || len(degraded.Parts) != 1 || degraded.Parts[0].ServicePort.Name != "clash" || degraded.Parts[0].Reason != "HNSRefused" {
		t.Fatalf("a frontend another component holds: %v, want only ns/clash degraded (HNSRefused)", err)
	}
	lbs := w.lbs()
	if _, ok := lbs["10.96.0.10:80/tcp"]; !ok {
		t.Fatal("the other services were not programmed")
	}
	if lb := lbs["10.96.99.99:80/tcp"]; lb.ID != foreign.ID || lb.HostComputeEndpoints[0] != p1 {
		t.Fatalf("the foreign load balancer was changed: %+v", lb)
	}
	if err := w.d.Cleanup(t.Context()); err != nil {
		t.Fatal(err)
	}
	left := w.lbs()
	if len(left) != 1 || left["10.96.99.99:80/tcp"].ID != foreign.ID {
		t.Fatalf("after cleanup: %v, want only the foreign one", keys(left))
	}
	if w.remoteCount() != 0 {
		t.Fatal("cleanup left our remote endpoints")
	}
}

func TestTransientErrorsAreRetriedAndIsolated(t *testing.T) {
	w := newWorld(t, hnssim.Windows2022, "L2Bridge")
	log := &problemLog{}
	w.env.Problems = log
	w.start()
	w.sim.FailNext("CreateLoadBalancer", hnssim.ErrUnavailable, 1)
	twoServices(w)
	if err := w.sync(); err == nil {
		t.Fatal("a failed create was not reported")
	}
	if n := w.sim.LoadBalancerCount(); n != 2 {
		t.Fatalf("%d load balancers after one failed create, want the other 2", n)
	}
	w.mustSync() // the retry
	if n := w.sim.LoadBalancerCount(); n != 3 {
		t.Fatalf("%d load balancers after the retry, want 3", n)
	}
	// The command hears which service port failed, and why.
	if len(log.got) != 1 || log.got[0].Reason != "HNSCallFailed" || log.got[0].ServicePort.Name == "" ||
		!strings.Contains(log.got[0].Message, "0x800706ba") {
		t.Fatalf("problems reported: %+v", log.got)
	}
}

func TestHNSRestartIsRetriedWithoutDuplicates(t *testing.T) {
	w := newWorld(t, hnssim.Windows2025, "L2Bridge")
	twoServices(w)
	w.mustSync()
	w.sim.Restart(4)
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "other-1", "other", v4, SlicePort("http", tcp, 8080), local("10.244.1.6"), local("10.244.1.5"))))
	tries := 0
	for w.apply() != nil {
		if tries++; tries > 10 {
			t.Fatal("never recovered from the HNS restart")
		}
		w.later(dataplanes.HoldMax) // the runner's next call
	}
	if n := w.sim.LoadBalancerCount(); n != 3 {
		t.Fatalf("%d load balancers, want 3 (no duplicates)", n)
	}
	if b := w.backends(w.lbs()["10.96.0.11:80/tcp"]); strings.Join(b, ",") != "10.244.1.5,10.244.1.6" {
		t.Fatalf("backends %v", b)
	}
}

func TestStaleLoadBalancersDeletedInBoundedSteps(t *testing.T) {
	w := newWorld(t, hnssim.Windows2022, "L2Bridge")
	for i := range 30 {
		w.tr.UpsertService(object.ServiceOf(Service("ns", fmt.Sprintf("s%d", i), ClusterIPs(fmt.Sprintf("10.96.1.%d", i+1)), Port("http", tcp, 80, 0))))
		w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", fmt.Sprintf("s%d-1", i), fmt.Sprintf("s%d", i), v4, SlicePort("http", tcp, 8080), local("10.244.1.5"))))
	}
	w.mustSync()
	// The services go while switchyard is down.
	for i := range 30 {
		w.tr.DeleteService("ns", fmt.Sprintf("s%d", i))
	}
	w.start()
	w.mustSync()
	if n := w.sim.LoadBalancerCount(); n != 10 {
		t.Fatalf("%d load balancers after the first sync, want 10 (20 deleted per sync)", n)
	}
	w.mustSync()
	if n := w.sim.LoadBalancerCount(); n != 0 {
		t.Fatalf("%d load balancers after the second sync, want 0", n)
	}
}

func TestObjectsGoneFromUnderTheDriver(t *testing.T) {
	t.Run("a pod's endpoint the CNI removed: one failed attempt, then programmed without it", func(t *testing.T) {
		w := newWorld(t, hnssim.Windows2025, "L2Bridge")
		twoServices(w)
		w.mustSync()
		w.sim.RemoveEndpointByIP("10.244.1.6") // the graph still lists it (not yet updated)
		w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "other-1", "other", v4, SlicePort("http", tcp, 8080), local("10.244.1.6"), local("10.244.1.5"))))
		if err := w.apply(); err == nil {
			t.Fatal("an update naming a vanished endpoint succeeded")
		}
		w.mustApply()
		if b := w.backends(w.lbs()["10.96.0.11:80/tcp"]); strings.Join(b, ",") != "10.244.1.5" {
			t.Fatalf("backends %v, want the endpoint HNS still has", b)
		}
	})
	t.Run("a load balancer deleted by hand: recreated on the next attempt", func(t *testing.T) {
		w := newWorld(t, hnssim.Windows2025, "L2Bridge")
		twoServices(w)
		w.mustSync()
		if err := w.sim.DeleteLoadBalancer(w.lbs()["10.96.0.11:80/tcp"].ID); err != nil {
			t.Fatal(err)
		}
		if err := w.sim.DeleteLoadBalancer(w.lbs()["10.96.0.10:80/tcp"].ID); err != nil {
			t.Fatal(err)
		}
		w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "other-1", "other", v4, SlicePort("http", tcp, 8080), local("10.244.1.6"), local("10.244.1.5"))))
		if err := w.apply(); err == nil {
			t.Fatal("modifying a vanished load balancer succeeded")
		}
		w.mustApply()
		lbs := w.lbs()
		if b := w.backends(lbs["10.96.0.11:80/tcp"]); strings.Join(b, ",") != "10.244.1.5,10.244.1.6" {
			t.Fatalf("backends %v", b)
		}
		if _, ok := lbs["10.96.0.10:80/tcp"]; !ok {
			t.Fatal("the other vanished load balancer (unchanged service) was not recreated with the re-read")
		}
	})
}

func TestPolicyChangeReplacesEvenWithModify(t *testing.T) {
	w := newWorld(t, hnssim.Windows2025, "L2Bridge")
	w.tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"))))
	w.mustSync()
	w.sim.ResetCalls()
	w.tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), ClientIPAffinity(60), Port("http", tcp, 80, 0))))
	w.mustApply()
	if got := lbCalls(w.sim.Calls()); fmt.Sprint(got) != fmt.Sprint(map[string]int{"CreateLoadBalancer": 1, "DeleteLoadBalancer": 1}) {
		t.Fatalf("calls %v: a distribution change should replace the load balancer", got)
	}
	if lb := w.lbs()["10.96.0.10:80/tcp"]; lb.PortMappings[0].DistributionType != hns.DistributionSourceIP {
		t.Fatalf("distribution %d", lb.PortMappings[0].DistributionType)
	}
}

// problemLog is a dataplanes.ProblemSink that keeps what it hears.
type problemLog struct{ got []dataplanes.Problem }

func (p *problemLog) Problem(x dataplanes.Problem) { p.got = append(p.got, x) }

// TestProblemsReachTheCommand: what HNS cannot program as asked reaches
// the command's sink (which counts it and records an Event on the
// Service) once, naming the service port and why; a permanent HNS refusal
// too. The other Service is programmed regardless.
func TestProblemsReachTheCommand(t *testing.T) {
	w := newWorld(t, hnssim.Windows2022, "L2Bridge")
	log := &problemLog{}
	w.env.Problems = log
	w.start()
	w.tr.UpsertService(object.ServiceOf(Service("ns", "mixed", ClusterIPs("10.96.0.51"), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "m-1", "mixed", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "m-2", "mixed", v4, SlicePort("http", tcp, 9090), local("10.244.1.6"))))
	// Another component owns 10.96.0.60:80 in HNS already.
	if _, err := w.sim.CreateLoadBalancer(&hns.LoadBalancer{FrontendVIPs: []string{"10.96.0.60"}, SchemaVersion: hns.V2,
		PortMappings: []hns.PortMapping{{Protocol: 6, InternalPort: 80, ExternalPort: 80}}}); err != nil {
		t.Fatal(err)
	}
	w.tr.UpsertService(object.ServiceOf(Service("ns", "taken", ClusterIPs("10.96.0.60"), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "t-1", "taken", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"))))
	w.sync()
	w.sync() // reported once, not on every sync
	reasons := map[string]string{}
	for _, p := range log.got {
		if _, dup := reasons[p.ServicePort.Name+"/"+p.Reason]; dup {
			t.Errorf("problem reported twice: %+v", p)
		}
		reasons[p.ServicePort.Name+"/"+p.Reason] = p.Message
	}
	if m := reasons["mixed/HNSCannotProgram"]; !strings.Contains(m, "target port") {
		t.Errorf("mixed target ports: %q (all: %v)", m, reasons)
	}
	if m := reasons["taken/HNSRefused"]; !strings.Contains(m, "0x803b0013") {
		t.Errorf("a VIP another component owns: %q (all: %v)", m, reasons)
	}
	if _, ok := w.lbs()["10.96.0.51:80/tcp"]; !ok {
		t.Errorf("the other Service was not programmed: %v", keys(w.lbs()))
	}
}
