package dataplanes

import (
	"maps"
	"slices"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

func TestPerServicePort(t *testing.T) {
	name := func(n string) graph.ServicePortName {
		return graph.ServicePortName{Namespace: "ns", Name: n, Protocol: graph.TCP}
	}
	sp := func(n string) *graph.ServicePort { return &graph.ServicePort{Name: name(n)} }
	held := map[graph.ServicePortName]bool{}
	var calls []string
	p := PerServicePort{
		Set:    func(s *graph.ServicePort) { held[s.Name] = true; calls = append(calls, "set "+s.Name.Name) },
		Remove: func(n graph.ServicePortName) { delete(held, n); calls = append(calls, "remove "+n.Name) },
	}
	held[name("old")] = true
	p.Sync(graph.Snapshot{ServicePorts: []*graph.ServicePort{sp("a"), sp("b")}}, maps.Keys(held))
	if want := []string{"set a", "set b", "remove old"}; !slices.Equal(calls, want) {
		t.Fatalf("sync: %v, want %v", calls, want)
	}
	calls = nil
	p.Apply(graph.Delta{Added: []*graph.ServicePort{sp("c")}, Updated: []graph.Update{{Old: sp("a"), New: sp("a")}}, Removed: []*graph.ServicePort{sp("b")}})
	if want := []string{"remove b", "set a", "set c"}; !slices.Equal(calls, want) {
		t.Fatalf("apply: %v, want %v", calls, want)
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for n := range held {
			if !yield(n.Name) {
				return
			}
		}
	}); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("held %v", got)
	}
}
