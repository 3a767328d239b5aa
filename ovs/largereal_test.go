//go:build linux

package ovs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	v1 "k8s.io/api/core/v1"
)

// On a real OVS, the dual-stack NodePort Service of 10 000 endpoints a
// family next to 200 ordinary ones is programmed in one sync: OVS takes
// every group of the trees, holds every ready endpoint as a bucket, and
// a resync reads back exactly what the driver wants (it sends nothing);
// one endpoint changing is two group-mods.
func TestLargeServiceOnRealOVS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o, d := benchDriver(t, ctx)
	tr, slices := largeCluster(10_000)
	full := tr.Next(true)
	if err := d.Sync(ctx, full.Snapshot); err != nil {
		t.Fatal(err)
	}
	tr.Commit(full)
	groups := o.Ofctl("dump-groups", bridge)
	v4, v6 := strings.Count(groups, "nat(dst=10.128."), strings.Count(groups, "nat(dst=[fd00:128::")
	if v4 < 9_000 || v6 < 9_000 {
		t.Fatalf("OVS holds %d IPv4 and %d IPv6 buckets of the large Service, want 9 000 (its ready endpoints) each at least", v4, v6)
	}
	// Each of their endpoints once; twice for the 20 with
	// externalTrafficPolicy Local whose one endpoint here is also in its
	// external group.
	if n := strings.Count(groups, "nat(dst=10.64."); n != 200*10+20 {
		t.Fatalf("OVS holds %d buckets of the 200 ordinary Services, want 2 020", n)
	}
	s0 := d.conn.Stats()
	again := tr.Next(true)
	if err := d.Sync(ctx, again.Snapshot); err != nil {
		t.Fatal(err)
	}
	tr.Commit(again)
	if s := d.conn.Stats(); s != s0 {
		t.Fatalf("a resync after the first sent %+v, want nothing: OVS does not hold what the driver wants", s)
	}
	flipped := slices[4].DeepCopy()
	notReady := false
	flipped.Endpoints[5].Conditions.Ready = &notReady
	tr.UpsertEndpointSlice(object.EndpointSliceOf(flipped))
	bt := tr.Next(false)
	if err := d.Apply(ctx, bt.Delta); err != nil {
		t.Fatal(err)
	}
	tr.Commit(bt)
	if got := d.conn.Stats(); got != (ofconn.Stats{Bundles: s0.Bundles + 1, FlowMods: s0.FlowMods, GroupMods: s0.GroupMods + 2}) {
		t.Fatalf("one endpoint changing sent %+v after %+v, want one bundle of 2 group-mods", got, s0)
	}
}

// The trial of issue 27, as a new user runs it: `switchyard run
// --dataplane ovs --file F --once` with a dual-stack NodePort Service of
// 10 000 endpoints a family (ten slices a family) next to 200 ordinary
// Services exits 0 with all of them in OVS (it exited 1, programming
// none, when one group held every endpoint).
func TestRunOnceProgramsALargeServiceAndTheRest(t *testing.T) {
	c := ovstest.NewCluster(t, false, node1)
	n := c.Nodes[0]
	synth := Synthetic(200, 10)
	var objs []any
	for i := range synth.Services {
		objs = append(objs, synth.Services[i], synth.Slices[i])
	}
	svc, slices := Large("big", "web", "node-1", 10_000, 1000, true, Type(v1.ServiceTypeNodePort),
		func(s *v1.Service) { s.Spec.Ports[0].NodePort = 32100 })
	objs = append(objs, svc)
	for _, s := range slices {
		objs = append(objs, s)
	}
	file := c.WriteClusterFile(t, objs...)
	if out, err := n.Switchyard(t, "run", "--once", "--file="+file); err != nil {
		t.Fatalf("switchyard run --once: %v\n%s", err, dataplanes.Bounded(out, 4000))
	}
	groups := n.OVS.Ofctl("dump-groups", "br-sy")
	if v4, v6, others := strings.Count(groups, "nat(dst=10.128."), strings.Count(groups, "nat(dst=[fd00:128::"), strings.Count(groups, "nat(dst=10.64."); v4 < 9_000 || v6 < 9_000 || others < 200*10 {
		t.Fatalf("OVS holds %d and %d buckets of the large Service's families and %d of the others', want 9 000, 9 000 and 2 000 at least", v4, v6, others)
	}
}
