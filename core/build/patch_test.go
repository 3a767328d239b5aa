package build

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

// TestPatchedBuildsMatchAFreshBuild: Services of many slices under every
// traffic policy, with topology hints, local and terminating endpoints,
// see small changes (one endpoint's conditions or hints, one endpoint
// coming or going) and now and then a large one; each build, patched
// from the last where it can be, is exactly what a fresh build of the
// same slices gives. Both ways are taken: patched, and rebuilt when a
// change moves a choice (the last ready endpoint going, hints appearing).
func TestPatchedBuildsMatchAFreshBuild(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []ServiceOption
	}{
		{"ClusterIP", nil},
		{"NodePort, ETP=Local", []ServiceOption{Type(v1.ServiceTypeNodePort), Port("np", v1.ProtocolTCP, 81, 30081), ETPLocal}},
		{"ITP=Local with an external IP", []ServiceOption{ITPLocal, ExternalIPs("192.0.2.7")}},
		{"both Local, NodePort", []ServiceOption{Type(v1.ServiceTypeNodePort), Port("np", v1.ProtocolTCP, 81, 30081), ITPLocal, ETPLocal}},
	} {
		t.Run(tc.name, func(t *testing.T) { patchScenario(t, tc.opts) })
	}
}

func patchScenario(t *testing.T, opts []ServiceOption) {
	r := rand.New(rand.NewPCG(27, 3))
	raw := Service("ns", "web", append([]ServiceOption{ClusterIPs("10.96.0.10", "fd00::10"), Port("http", v1.ProtocolTCP, 80, 0)}, opts...)...)
	svc := object.ServiceOf(raw) // one object: an unchanged Service
	node := graph.Node{Name: "node-1", Zone: "zone-a"}
	type ep struct {
		ready, serving, terminating bool
		node                        int
		hints                       string // "", "zone-a", "zone-b", "node-1"
	}
	slicesNow := map[string]map[int]ep{}
	randomEp := func() ep {
		e := ep{ready: true, serving: true, node: r.IntN(3)}
		switch r.IntN(6) {
		case 0:
			e.ready, e.terminating = false, true
		case 1:
			e.ready, e.serving = false, false
		}
		return e
	}
	toAPI := func(name string) *discovery.EndpointSlice {
		fam, ip := discovery.AddressTypeIPv4, func(k int) string { return fmt.Sprintf("10.1.%d.%d", k/250, k%250) }
		if name >= "web-6" {
			fam, ip = discovery.AddressTypeIPv6, func(k int) string { return fmt.Sprintf("fd00:1::%x", k) }
		}
		sopts := []SliceOption{SlicePort("http", v1.ProtocolTCP, 8080), SlicePort("np", v1.ProtocolTCP, 8081)}
		for k, e := range slicesNow[name] {
			eo := []EndpointOption{Conditions(e.ready, e.serving, e.terminating), OnNode(fmt.Sprintf("node-%d", e.node))}
			switch e.hints {
			case "zone-a", "zone-b":
				eo = append(eo, ZoneHints(e.hints))
			case "node-1":
				eo = append(eo, NodeHints("node-1"))
			}
			sopts = append(sopts, Endpoint(ip(k), eo...))
		}
		return Slice("ns", name, "web", fam, sopts...)
	}
	// Twelve slices (six a family), 80 endpoints each, some ip:ports in
	// two slices.
	for s := range 12 {
		name := fmt.Sprintf("web-%d", s)
		slicesNow[name] = map[int]ep{}
		for range 80 {
			slicesNow[name][r.IntN(600)] = randomEp()
		}
	}
	prepared := map[string]*PreparedSlice{}
	apiNow := map[string]*discovery.EndpointSlice{}
	refresh := func(name string) {
		apiNow[name] = toAPI(name)
		prepared[name] = PrepareSlice(object.EndpointSliceOf(apiNow[name]), Options{})
	}
	for name := range slicesNow {
		refresh(name)
	}
	b := NewBuilder(Options{})
	var m Merged
	for step := range 400 {
		name := fmt.Sprintf("web-%d", r.IntN(12))
		s := slicesNow[name]
		keys := make([]int, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		switch k := r.IntN(20); {
		case k < 8 && len(keys) > 0: // conditions
			key := keys[r.IntN(len(keys))]
			s[key] = randomEp()
		case k < 11 && len(keys) > 0: // hints
			key := keys[r.IntN(len(keys))]
			e := s[key]
			e.hints = []string{"", "zone-a", "zone-b", "node-1"}[r.IntN(4)]
			s[key] = e
		case k < 14: // one comes
			s[r.IntN(600)] = randomEp()
		case k < 17 && len(keys) > 0: // one goes
			delete(s, keys[r.IntN(len(keys))])
		case k == 17: // every endpoint of the slice gets hints (topology may apply)
			for key, e := range s {
				e.hints = "zone-a"
				s[key] = e
			}
		case k == 18: // a large change: the slice anew
			clear(s)
			for range 80 {
				s[r.IntN(600)] = randomEp()
			}
		}
		refresh(name)
		var raws []*discovery.EndpointSlice
		var ps []*PreparedSlice
		for n, s := range apiNow {
			raws, ps = append(raws, s), append(ps, prepared[n])
		}
		got := b.ServicePorts(svc, ps, node, &m)
		sameResult(t, fmt.Sprintf("step %d", step), got, fromAPI(raw, raws, node, Options{}))
	}
	t.Logf("%d patched ports", b.patches)
	if b.patches < 200 {
		t.Errorf("%d of 400 builds were patches", b.patches)
	}
}
