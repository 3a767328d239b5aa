package hns_test

import (
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

// changeWebEndpoints moves the web Service of twoServices to new
// endpoints.
func changeWebEndpoints(w *world, ips ...string) {
	opts := []SliceOption{SlicePort("http", tcp, 8080)}
	for _, ip := range ips {
		opts = append(opts, local(ip))
	}
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, opts...)))
}

// On HNS 15.4 ModifyLoadBalancer succeeds and changes nothing
// (kubernetes#131466; hcsshim allows it from 15.4, upstream from 15.5):
// the driver replaces load balancers there, and backends follow.
func TestNoInPlaceModifyBeforeHNS15_5(t *testing.T) {
	for _, tc := range []struct {
		version hns.Version
		modify  bool
	}{
		{hns.Version{Major: 15, Minor: 4}, false},
		{hns.Version{Major: 15, Minor: 5}, true},
	} {
		w := newWorld(t, hnssim.Windows2025, "L2Bridge")
		w.sim.SetVersion(tc.version)
		w.start()
		twoServices(w)
		w.mustSync()
		w.sim.ResetCalls()
		changeWebEndpoints(w, "10.244.1.6")
		w.mustApply()
		calls := lbCalls(w.sim.Calls())
		if (calls["UpdateLoadBalancer"] > 0) != tc.modify {
			t.Errorf("HNS %v: calls %v; in-place modify %v", tc.version, calls, tc.modify)
		}
		if b := w.backends(w.lbs()["10.96.0.10:80/tcp"]); strings.Join(b, ",") != "10.244.1.6" {
			t.Errorf("HNS %v: backends %v after the change, want 10.244.1.6", tc.version, b)
		}
	}
}

// An HNS that takes a modify without applying it, whatever version it
// reports, is caught by reading the load balancer back: the driver
// replaces it, says so once, and stops modifying in place.
func TestAModifyHNSDidNotApplyIsCaught(t *testing.T) {
	w := newWorld(t, hnssim.Windows2025, "L2Bridge")
	log := &problemLog{}
	w.env.Problems = log
	w.start()
	w.sim.IgnoreModifies()
	twoServices(w)
	w.mustSync()
	changeWebEndpoints(w, "10.244.1.6")
	w.mustApply()
	if b := w.backends(w.lbs()["10.96.0.10:80/tcp"]); strings.Join(b, ",") != "10.244.1.6" {
		t.Fatalf("backends %v after the change, want 10.244.1.6", b)
	}
	if len(log.got) != 1 || log.got[0].Reason != "ModifyNotApplied" || log.got[0].ServicePort.Name != "web" {
		t.Fatalf("problems %+v; want one ModifyNotApplied on web", log.got)
	}
	w.sim.ResetCalls()
	changeWebEndpoints(w, "10.244.1.5")
	w.mustApply()
	if calls := lbCalls(w.sim.Calls()); calls["UpdateLoadBalancer"] != 0 || calls["CreateLoadBalancer"] == 0 {
		t.Fatalf("calls %v after a modify was seen not to apply; want delete and create only", calls)
	}
	if b := w.backends(w.lbs()["10.96.0.10:80/tcp"]); strings.Join(b, ",") != "10.244.1.5" {
		t.Fatalf("backends %v after the second change, want 10.244.1.5", b)
	}
}
