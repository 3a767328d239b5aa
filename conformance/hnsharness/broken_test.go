package hnsharness

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

// forgetful passes everything to the real driver except deletions.
type forgetful struct{ dataplanes.Driver }

func (f forgetful) Apply(ctx context.Context, d graph.Delta) error {
	d.Removed = nil
	return f.Driver.Apply(ctx, d)
}

// localOnly hides every remote endpoint from the real driver.
type localOnly struct{ dataplanes.Driver }

func strip(sp *graph.ServicePort) *graph.ServicePort {
	c := *sp
	keep := func(eps graph.EndpointList) graph.EndpointList {
		return graph.EndpointListOf(slices.DeleteFunc(eps.Slice(), func(e graph.Endpoint) bool { return !e.Local })...)
	}
	c.InternalEndpoints, c.ExternalEndpoints, c.ShortCircuitEndpoints = keep(c.InternalEndpoints), keep(c.ExternalEndpoints), keep(c.ShortCircuitEndpoints)
	return &c
}

func (l localOnly) Sync(ctx context.Context, s graph.Snapshot) error {
	var sps []*graph.ServicePort
	for _, sp := range s.ServicePorts {
		sps = append(sps, strip(sp))
	}
	s.ServicePorts = sps
	return l.Driver.Sync(ctx, s)
}

func (l localOnly) Apply(ctx context.Context, d graph.Delta) error {
	// Copies: the delta's slices belong to the core.
	d.Added, d.Updated, d.Removed = slices.Clone(d.Added), slices.Clone(d.Updated), slices.Clone(d.Removed)
	for i := range d.Added {
		d.Added[i] = strip(d.Added[i])
	}
	for i := range d.Updated {
		d.Updated[i] = graph.Update{Old: strip(d.Updated[i].Old), New: strip(d.Updated[i].New)}
	}
	for i := range d.Removed {
		d.Removed[i] = strip(d.Removed[i])
	}
	return l.Driver.Apply(ctx, d)
}

// TestABrokenDriverFailsTheSuite shows the suite can fail: the real HNS
// driver, broken on purpose in two ways, fails the cases that exercise
// what was broken, with messages naming the case, the probe, what was
// expected and what was seen.
func TestABrokenDriverFailsTheSuite(t *testing.T) {
	cases, err := conformance.Cases()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		wrap     func(dataplanes.Driver) dataplanes.Driver
		mustFail []string
	}{
		{"forgets deletions", func(d dataplanes.Driver) dataplanes.Driver { return forgetful{d} },
			[]string{"service-deleted", "service-recreated"}},
		{"hides remote endpoints", func(d dataplanes.Driver) dataplanes.Driver { return localOnly{d} },
			[]string{"clusterip-tcp", "nodeport-from-external", "endpoints-scale-up-and-down", "terminating-fallback-cluster"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Start(t, "hns-broken", hnssim.Windows2025, "L2Bridge")
			h.Wrap(tc.wrap)
			failed := map[string]conformance.Result{}
			for _, c := range cases {
				if r := conformance.Check(context.Background(), h, c); r.Status == conformance.Fail {
					failed[c.Name] = r
				}
			}
			for _, name := range tc.mustFail {
				r, ok := failed[name]
				if !ok {
					t.Errorf("case %s passed on a driver that %s", name, tc.name)
					continue
				}
				msg := strings.Join(r.Failures, "\n")
				if !strings.Contains(msg, "probe") || !strings.Contains(msg, "expected") || !strings.Contains(msg, "saw") {
					t.Errorf("case %s: failure %q does not say which probe, what was expected and what was seen", name, msg)
				}
			}
			t.Logf("%d cases failed on a driver that %s: %v", len(failed), tc.name, slices.Sorted(maps.Keys(failed)))
		})
	}
}
