package graph

import (
	"slices"
	"testing"
)

func TestDiff(t *testing.T) {
	sp := func(name string, port uint16) *ServicePort {
		return &ServicePort{Name: ServicePortName{Namespace: "ns", Name: name, Protocol: TCP}, Port: port}
	}
	names := func(sps []*ServicePort) []string {
		var out []string
		for _, s := range sps {
			out = append(out, s.Name.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name                    string
		old, new                []*ServicePort
		added, updated, removed []string
	}{
		{"nothing", nil, nil, nil, nil, nil},
		{"all new", nil, []*ServicePort{sp("a", 80), sp("b", 80)}, []string{"a", "b"}, nil, nil},
		{"all gone", []*ServicePort{sp("a", 80), sp("b", 80)}, nil, nil, nil, []string{"a", "b"}},
		{"unchanged is left out", []*ServicePort{sp("a", 80)}, []*ServicePort{sp("a", 80)}, nil, nil, nil},
		{"interleaved", []*ServicePort{sp("a", 80), sp("c", 80), sp("d", 80)}, []*ServicePort{sp("b", 80), sp("c", 81), sp("d", 80), sp("e", 80)},
			[]string{"b", "e"}, []string{"c"}, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sorted Delta
			DiffSorted(&sorted, tc.old, tc.new)
			byIndex := Diff(IndexOf(tc.old), IndexOf(tc.new))
			for _, d := range []Delta{sorted, byIndex} {
				var updated []string
				for _, u := range d.Updated {
					updated = append(updated, u.New.Name.Name)
				}
				if !slices.Equal(names(d.Added), tc.added) || !slices.Equal(updated, tc.updated) || !slices.Equal(names(d.Removed), tc.removed) {
					t.Fatalf("added %v updated %v removed %v; want %v %v %v", names(d.Added), updated, names(d.Removed), tc.added, tc.updated, tc.removed)
				}
			}
		})
	}
}
