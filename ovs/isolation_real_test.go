//go:build linux

package ovs

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// On a real OVS: a Service whose group was deleted behind the driver's
// back has its next change refused by OVS (an unknown group); it is held
// back while the other Service's change goes through, a pod attached by
// switchyard-cni meanwhile is programmed (the CNI's wait depends on its
// own port only), and the retry after the backoff reads the bridge back
// and repairs the Service: traffic reaches its new endpoint.
func TestRefusedServiceIsHeldWhilePodsAndOthersGoOn(t *testing.T) {
	w := newWorld(t)
	webService(w)
	w.sync()
	web := graph.ServicePortName{Namespace: "ns", Name: "web", Port: "http", Protocol: graph.TCP}
	w.d.mu.Lock() // the driver's port watch writes the model under it
	_, groups := w.d.model.State().Owned(engine.ServicePortOwner(web))
	w.d.mu.Unlock()
	for _, id := range groups {
		w.o.Ofctl("del-groups", bridge, fmt.Sprintf("group_id=%d", id))
	}
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), onNode1(p2IP4.String()))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "other-1", "other", v4, SlicePort("http", tcp, 8080), onNode1(p1IP4.String()))))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := w.tr.Next(false)
	err := w.d.Apply(ctx, b.Delta)
	var degraded *dataplanes.Degraded
	if !errors.As(err, &degraded) || len(degraded.Parts) != 1 || degraded.Parts[0].ServicePort != web {
		t.Fatalf("%v; want %s held back alone", err, web)
	}
	w.tr.Commit(b) // as the runner does
	if id, err := ovstest.ProbeTCP(w.client.NS, netip.Addr{}, ap("10.96.0.11", 80), probeTimeout); id != "p1" {
		t.Fatalf("the other Service's change did not go through: %q, %v", id, err)
	}

	// A pod comes while web is held: switchyard-cni's ADD returns once
	// its port is programmed (AddPod fails the test otherwise).
	p4 := w.n.AddPod(t, "p4", netip.MustParseAddr("10.244.1.9"))
	ovstest.ServeTCP(t, p4.NS, 8080, "p4")
	if id, err := ovstest.ProbeTCP(w.client.NS, netip.Addr{}, ap("10.244.1.9", 8080), probeTimeout); id != "p4" {
		t.Fatalf("the new pod is not reachable: %q, %v", id, err)
	}

	// The runner calls again when asked: the bridge is read back, the
	// missing group added, web programmed.
	time.Sleep(time.Until(degraded.Retry))
	if err := w.d.Apply(ctx, graph.Delta{}); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if id, err := ovstest.ProbeTCP(w.client.NS, netip.Addr{}, ap("10.96.0.10", 80), probeTimeout); id != "p2" {
		t.Fatalf("web after the retry: %q, %v", id, err)
	}
}
