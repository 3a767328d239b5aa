package hns_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
	"github.com/switchyard-proxy/switchyard/internal/instancelock"
)

// crashAfterCreate is HNS seen by a switchyard that dies right after HNS
// made a load balancer and before it could record it: the create is done,
// its answer never arrives.
type crashAfterCreate struct {
	*hnssim.Sim
}

var errCrashed = errors.New("switchyard died before it read HNS's answer")

// createThenCrash runs w's driver over crashAfterCreate and syncs one
// Service: HNS makes its load balancer, the driver never hears of it.
func createThenCrash(t *testing.T, w *world) {
	t.Helper()
	w.d.Close()
	d, err := hns.NewDriver(crashAfterCreate{w.sim}, w.opts, w.env)
	if err != nil {
		t.Fatal(err)
	}
	w.d = d
	w.tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"))))
	if err := w.sync(); err == nil {
		t.Fatal("the create whose answer never came reported success")
	}
}

func (c crashAfterCreate) CreateLoadBalancer(lb *hns.LoadBalancer) (*hns.LoadBalancer, error) {
	if _, err := c.Sim.CreateLoadBalancer(lb); err != nil {
		return nil, err
	}
	return nil, errCrashed
}

// TestCrashBetweenCreateAndRecord: a switchyard that dies between HNS's
// create and its ownership record leaves no orphan: the restarted driver
// adopts the load balancer its intent names (HNS would refuse a second
// one for the frontend, and the Service would keep stale endpoints), then
// follows the Service's changes. A load balancer of another component
// on another frontend, which no intent names, is left alone.
func TestCrashBetweenCreateAndRecord(t *testing.T) {
	w := newWorld(t, hnssim.Windows2025, "L2Bridge")
	foreign := hns.LoadBalancer{FrontendVIPs: []string{"10.96.7.7"}, PortMappings: []hns.PortMapping{{Protocol: 6, InternalPort: 53, ExternalPort: 53}}}
	theirs, err := w.sim.CreateLoadBalancer(&foreign)
	if err != nil {
		t.Fatal(err)
	}
	createThenCrash(t, w)
	if n := w.sim.LoadBalancerCount(); n != 2 {
		t.Fatalf("HNS holds %d load balancers after the crashed create, want 2 (the foreign one and the unrecorded one)", n)
	}

	w.start() // switchyard restarted, same HNS and state file
	w.mustSync()
	lbs := w.lbs()
	if n := w.sim.LoadBalancerCount(); n != 2 {
		t.Fatalf("after the restart HNS holds %d load balancers, want 2: %v", n, lbs)
	}
	web, ok := lbs["10.96.0.10:80/tcp"]
	if !ok || !slices.Equal(w.backends(web), []string{"10.244.1.5"}) {
		t.Fatalf("the Service's load balancer after the restart: %v (found %v)", lbs, ok)
	}
	// Adopted, so owned: a change modifies it in place.
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), local("10.244.1.5"), local("10.244.1.6"))))
	w.sim.ResetCalls()
	w.mustApply()
	if c := lbCalls(w.sim.Calls()); c["UpdateLoadBalancer"] != 1 || c["CreateLoadBalancer"] != 0 {
		t.Fatalf("a change after the adoption: calls %v, want one update in place", c)
	}
	if _, err := w.sim.LoadBalancer(theirs.ID); err != nil {
		t.Fatalf("the foreign load balancer is gone: %v", err)
	}
}

// TestLostCreateAnswerIsAdopted: a create whose answer is lost (a timeout,
// with HNS having made the load balancer) is retried; HNS refuses the
// frontend as in use, and the driver adopts the load balancer its intent
// names instead of holding the Service back for good.
func TestLostCreateAnswerIsAdopted(t *testing.T) {
	w := newWorld(t, hnssim.Windows2025, "L2Bridge")
	createThenCrash(t, w)
	w.later(time.Minute) // past the held key's backoff
	w.sim.ResetCalls()
	if err := w.apply(); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if n := w.sim.LoadBalancerCount(); n != 1 {
		t.Fatalf("HNS holds %d load balancers, want 1", n)
	}
	if c := lbCalls(w.sim.Calls()); c["CreateLoadBalancer"] != 1 || c["DeleteLoadBalancer"] != 0 {
		t.Fatalf("the retry made %v: want one create (refused: in use), then the adoption", c)
	}
}

// TestASecondInstanceIsRefused: one switchyard per node's HNS, on Windows
// as on Linux: a second driver over the same state is refused, naming the
// holder, and takes over once the first is gone.
func TestASecondInstanceIsRefused(t *testing.T) {
	w := newWorld(t, hnssim.Windows2025, "L2Bridge")
	_, err := hns.NewDriver(w.sim, w.opts, w.env)
	if !errors.Is(err, instancelock.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("a second driver: %v, want a refusal naming pid %d", err, os.Getpid())
	}
	w.start() // the first one closed: a restart takes the lock
}
