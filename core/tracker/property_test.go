package tracker

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// world is the test's own record of the objects that currently exist.
type world struct {
	services map[string]*v1.Service
	slices   map[string]*discovery.EndpointSlice
	node     *v1.Node
}

func (w *world) feed(tr *Tracker) {
	for _, s := range w.services {
		tr.UpsertService(object.ServiceOf(s))
	}
	for _, s := range w.slices {
		tr.UpsertEndpointSlice(object.EndpointSliceOf(s))
	}
	if w.node != nil {
		tr.UpsertNode(w.node)
	}
}

func randomService(r *rand.Rand, name string) *v1.Service {
	opts := []ServiceOption{ClusterIPs(fmt.Sprintf("10.96.0.%d", r.IntN(200)+1)), Port("http", tcp, 80, 0)}
	if r.IntN(2) == 0 {
		opts = append(opts, Port("extra", tcp, 81, 0))
	}
	switch r.IntN(4) {
	case 0:
		opts = append(opts, Type(v1.ServiceTypeNodePort), ETPLocal, func(s *v1.Service) { s.Spec.Ports[0].NodePort = 30000 + int32(r.IntN(100)) })
	case 1:
		opts = append(opts, ITPLocal)
	}
	return Service(ns, name, opts...)
}

func randomSlice(r *rand.Rand, svc, name string) *discovery.EndpointSlice {
	opts := []SliceOption{SlicePort("http", tcp, 8080)}
	if r.IntN(2) == 0 {
		opts = append(opts, SlicePort("extra", tcp, 8081))
	}
	for i := range r.IntN(4) {
		eo := []EndpointOption{OnNode(fmt.Sprintf("node-%d", r.IntN(3)+1))}
		switch r.IntN(4) {
		case 0:
			eo = append(eo, Terminating)
		case 1:
			eo = append(eo, NotReady)
		}
		if r.IntN(2) == 0 {
			eo = append(eo, ZoneHints([]string{"zone-a", "zone-b"}[r.IntN(2)]))
		}
		opts = append(opts, Endpoint(fmt.Sprintf("10.244.%d.%d", r.IntN(3), i+1), eo...))
	}
	return Slice(ns, name, svc, v4, opts...)
}

// TestRandomChangesConverge drives the tracker with random changes, batches
// that fail (no commit) and full syncs, and checks after every commit that a
// driver which applied the committed deltas holds exactly the graph a fresh
// tracker builds from the same objects.
func TestRandomChangesConverge(t *testing.T) {
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 7))
		tr, _ := newTracker(t)
		w := &world{services: map[string]*v1.Service{}, slices: map[string]*discovery.EndpointSlice{}}
		driver := graph.Index{}
		svcNames := []string{"a", "b", "c", "d"}
		for step := range 200 {
			switch op := r.IntN(10); {
			case op < 3:
				n := svcNames[r.IntN(len(svcNames))]
				w.services[n] = randomService(r, n)
				tr.UpsertService(object.ServiceOf(w.services[n]))
			case op == 3:
				n := svcNames[r.IntN(len(svcNames))]
				delete(w.services, n)
				tr.DeleteService(ns, n)
			case op < 8:
				name := fmt.Sprintf("s%d", r.IntN(6))
				w.slices[name] = randomSlice(r, svcNames[r.IntN(len(svcNames))], name)
				tr.UpsertEndpointSlice(object.EndpointSliceOf(w.slices[name]))
			case op == 8:
				name := fmt.Sprintf("s%d", r.IntN(6))
				delete(w.slices, name)
				tr.DeleteEndpointSlice(ns, name)
			default:
				w.node = Node("node-1", []string{"", "zone-a", "zone-b"}[r.IntN(3)], "192.0.2.1")
				tr.UpsertNode(w.node)
			}
			if r.IntN(3) != 0 {
				continue
			}
			full := r.IntN(8) == 0
			b := tr.Next(full)
			if r.IntN(4) == 0 {
				continue // the driver failed: nothing applied, nothing committed
			}
			if full {
				driver = graph.IndexOf(b.Snapshot.ServicePorts)
			} else {
				driver.Apply(b.Delta)
			}
			tr.Commit(b)

			fresh, _ := newTracker(t)
			w.feed(fresh)
			want := graph.IndexOf(fresh.Snapshot().ServicePorts)
			if d := graph.Diff(driver, want); !d.Empty() {
				t.Fatalf("seed %d step %d: driver differs from a fresh build: %s", seed, step, describe(d))
			}
			if tr.HasPending() {
				t.Fatalf("seed %d step %d: still pending right after a commit", seed, step)
			}
		}
	}
}
