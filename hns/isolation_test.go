package hns_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

// A Service whose load balancer HNS refuses never stops the others: next
// to 200 Services, it alone is degraded and reported once, a change of
// another Service meanwhile is programmed, and once HNS takes it, it is
// programmed: after the backoff when the call failed, at the next full
// sync when HNS refused it as it will again ("the parameter is
// incorrect").
func TestOneRefusedLoadBalancerStaysAlone(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		err          error
		retry        func(w *world) error
	}{
		{"call failed", "HNSCallFailed", hnssim.ErrUnavailable, func(w *world) error {
			w.later(dataplanes.HoldFirst)
			return w.apply()
		}},
		{"refused", "HNSRefused", errors.New("hcnCreateLoadBalancer failed in Win32: The parameter is incorrect. (0x80070057)"), func(w *world) error {
			if err := w.apply(); err == nil {
				return errors.New("retried before the full sync")
			}
			return w.sync()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, hnssim.Windows2025, "L2Bridge")
			log := &problemLog{}
			w.env.Problems = log
			w.start()
			for i := range 200 {
				name := fmt.Sprintf("svc-%03d", i)
				w.tr.UpsertService(object.ServiceOf(Service("ns", name, ClusterIPs(fmt.Sprintf("10.96.1.%d", i)), Port("http", tcp, 80, 0))))
				w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", name+"-1", name, v4, SlicePort("http", tcp, 8080), local("10.244.1.5"))))
			}
			w.tr.UpsertService(object.ServiceOf(Service("ns", "bad", ClusterIPs("10.96.2.1"), Port("http", tcp, 80, 0))))
			w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "bad-1", "bad", v4, SlicePort("http", tcp, 8080), local("10.244.1.6"))))
			w.sim.RefuseWhile(func(lb *hns.LoadBalancer) error {
				if slices.Contains(lb.FrontendVIPs, "10.96.2.1") {
					return tc.err
				}
				return nil
			})
			err := w.sync()
			var degraded *dataplanes.Degraded
			if !errors.As(err, &degraded) || len(degraded.Parts) != 1 || degraded.Parts[0].ServicePort.Name != "bad" || degraded.Parts[0].Reason != tc.reason {
				t.Fatalf("%v; want ns/bad alone degraded (%s)", err, tc.reason)
			}
			if n := w.sim.LoadBalancerCount(); n != 200 {
				t.Fatalf("%d load balancers, want the 200 others", n)
			}
			w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "svc-007-1", "svc-007", v4, SlicePort("http", tcp, 8080), local("10.244.1.6"))))
			if err := w.apply(); !errors.As(err, &degraded) {
				t.Fatalf("%v; want ns/bad still degraded", err)
			}
			if b := w.backends(w.lbs()["10.96.1.7:80/tcp"]); !slices.Equal(b, []string{"10.244.1.6"}) {
				t.Fatalf("another Service's change while one is held: backends %v", b)
			}
			w.sim.RefuseWhile(nil)
			if err := tc.retry(w); err != nil {
				t.Fatalf("the retry: %v", err)
			}
			if n := w.sim.LoadBalancerCount(); n != 201 {
				t.Fatalf("%d load balancers after the retry, want 201", n)
			}
			if len(log.got) != 1 || log.got[0].Reason != tc.reason || log.got[0].ServicePort.Name != "bad" {
				t.Fatalf("problems %+v, want ns/bad reported once", log.got)
			}
		})
	}
}
