package dataplanes

import (
	"iter"
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// PerServicePort is state kept per service port (a driver's desired
// objects, a reporter's counts), brought up to date from a snapshot or a
// delta by the same two functions: Set takes a service port that is new
// or changed, Remove one that is gone. The node and the peers are the
// caller's. (graph.Index is the same for a driver that keeps the graph
// whole.)
type PerServicePort struct {
	Set    func(*graph.ServicePort)
	Remove func(graph.ServicePortName)
}

// Sync brings the state to a snapshot: every service port of it is Set,
// then every one of held (what the state holds now) that the snapshot
// lacks is Removed. held is read before any Remove.
func (p PerServicePort) Sync(s graph.Snapshot, held iter.Seq[graph.ServicePortName]) {
	want := make(map[graph.ServicePortName]bool, len(s.ServicePorts))
	for _, sp := range s.ServicePorts {
		want[sp.Name] = true
		p.Set(sp)
	}
	gone := slices.Collect(func(yield func(graph.ServicePortName) bool) {
		for n := range held {
			if !want[n] && !yield(n) {
				return
			}
		}
	})
	for _, n := range gone {
		p.Remove(n)
	}
}

// Apply hands a delta's service ports over: the removed first, then the
// updated and the added.
func (p PerServicePort) Apply(d graph.Delta) {
	for _, sp := range d.Removed {
		p.Remove(sp.Name)
	}
	for _, u := range d.Updated {
		p.Set(u.New)
	}
	for _, sp := range d.Added {
		p.Set(sp)
	}
}
