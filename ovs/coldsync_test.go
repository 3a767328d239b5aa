package ovs

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	"github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn/ofconntest"
)

func TestColdPartEnds(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []int
	}{
		{0, nil},
		{1, []int{1}},
		{2048, []int{2048}},
		{5000, []int{2048, 5000}},
		{100000, []int{2048, 6144, 14336, 30720, 47104, 63488, 79872, 96256, 100000}},
	} {
		if diff := cmp.Diff(tc.want, coldPartEnds(tc.n)); diff != "" {
			t.Errorf("coldPartEnds(%d) (-want +got):\n%s", tc.n, diff)
		}
	}
}

// coldCluster is memCluster with n synthetic Services more (ten of them
// share a ClusterIP with one of memCluster's: flows two owners want, in
// different parts).
func coldCluster(n int) *tracker.Tracker {
	tr := memCluster()
	syn := testobj.Synthetic(n, 3)
	for i := range syn.Services {
		tr.UpsertService(object.ServiceOf(syn.Services[i]))
		tr.UpsertEndpointSlice(object.EndpointSliceOf(syn.Slices[i]))
	}
	return tr
}

// A cold start with many service ports goes in parts and leaves the
// bridge as one bundle does; a restart adopts it without a message; a
// resync sends nothing.
func TestColdStartInParts(t *testing.T) {
	const n = 9000
	parts := newMemDriver(t, ofconntest.NewBridge(), coldCluster(n))
	parts.mustSync()
	parts.converged()
	got := parts.br.Counts()
	if want := len(coldPartEnds(n)); got.Bundles != want {
		t.Errorf("the cold start sent %d bundles, want %d (its parts)", got.Bundles, want)
	}

	// The same graph as one bundle: a driver whose first sync had nothing
	// to send, then a full sync.
	empty := tracker.New(tracker.Options{NodeName: "node-1", Peers: true})
	one := newMemDriver(t, ofconntest.NewBridge(), empty)
	one.mustSync()
	one.tr = coldCluster(n)
	one.mustSync()
	if diff := cmp.Diff(one.br.Dump(), parts.br.Dump()); diff != "" {
		t.Fatalf("the bridge after parts differs from after one bundle (-one +parts):\n%s", diff)
	}

	before := parts.br.Counts()
	parts.mustSync()
	restarted := newMemDriver(t, parts.br, coldCluster(n))
	restarted.mustSync()
	if got := mods(before, parts.br.Counts()); got != (ofconntest.Counts{}) {
		t.Fatalf("a resync and a restart after the parts sent %+v, want nothing", got)
	}
}

// A part that fails leaves the driver to read the bridge back and send
// the rest as one round: the cold start converges, with a refused
// service port held back until its retry.
func TestColdPartFailureConverges(t *testing.T) {
	const n = 9000
	// Service ports go in name order: the last namespace's is in the last part.
	target := graph.ServicePortName{Namespace: "ns-49", Name: "svc-08999", Port: "http", Protocol: "TCP"}
	if partOf(t, coldCluster(n), target) == 0 {
		t.Fatalf("%s is in the first part; the case wants parts committed before the refused one", target)
	}
	for _, tc := range []struct {
		name   string
		break_ func(md *memDriver)
		held   bool
	}{
		{"connection lost before the first part's commit", func(md *memDriver) { md.br.FailNext(ofconntest.LoseBeforeCommit) }, false},
		{"connection lost after the first part's commit", func(md *memDriver) { md.br.FailNext(ofconntest.LoseAfterCommit) }, false},
		{"a later part refused", func(md *memDriver) { md.br.RefuseWhile(&ofconntest.Refusal{Picks: ownedBy(t, coldCluster(n), target)}) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := newMemDriver(t, ofconntest.NewBridge(), coldCluster(n))
			tc.break_(md)
			err := md.sync()
			var degraded *dataplanes.Degraded
			switch {
			case tc.held && !errors.As(err, &degraded):
				t.Fatalf("the cold start returned %v; want %s held back", err, target)
			case !tc.held && err != nil:
				t.Fatalf("the cold start failed: %v", err)
			}
			if tc.held {
				if c := md.br.Counts(); c.Refused == 0 || c.Bundles < 2 {
					t.Fatalf("the bridge committed %d bundles and refused %d; want earlier parts committed, then a refusal", c.Bundles, c.Refused)
				}
				md.br.RefuseWhile(nil)
				md.later(dataplanes.HoldFirst)
				md.mustApply() // the runner's retry
			}
			md.converged()
			before := md.br.Counts()
			md.mustSync()
			if got := mods(before, md.br.Counts()); got != (ofconntest.Counts{}) {
				t.Fatalf("a resync after the cold start sent %+v, want nothing", got)
			}
		})
	}
}

// ownedBy picks the messages of one service port's flows, as a model
// holding tr's graph renders them.
func ownedBy(t *testing.T, tr *tracker.Tracker, sp graph.ServicePortName) func(cookie uint64, group uint32, isGroup bool) bool {
	m, _ := committedModel(t, tr)
	cookies := map[uint64]bool{}
	for _, f := range m.State().DesiredFlows() {
		if name, ok := m.ServicePortOf(f); ok && name == sp {
			cookies[f] = true
		}
	}
	if len(cookies) == 0 {
		t.Fatalf("%s renders no flow", sp)
	}
	return func(cookie uint64, _ uint32, isGroup bool) bool { return !isGroup && cookies[cookie] }
}

// partOf says which part of a cold start (0: the first) tr's service
// port sp goes in.
func partOf(t *testing.T, tr *tracker.Tracker, sp graph.ServicePortName) int {
	all := tr.Next(true).Snapshot.ServicePorts
	ends := coldPartEnds(len(all))
	for i, p := range all {
		if p.Name == sp {
			for k, end := range ends {
				if i < end {
					return k
				}
			}
		}
	}
	t.Fatalf("%s is not in the snapshot", sp)
	return 0
}
