package build

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// referenceMerge is the rule candidates implements, written the obvious
// way: the runs concatenated, sorted stably by ip:port, one kept per
// ip:port (the last non-terminating copy, else the first).
func referenceMerge(runs [][]candidate) []candidate {
	all := slices.Concat(runs...)
	slices.SortStableFunc(all, func(a, b candidate) int { return graph.CompareEndpoints(a.ep, b.ep) })
	var out []candidate
	for i := 0; i < len(all); {
		j, pick := i+1, i
		for ; j < len(all) && graph.CompareEndpoints(all[i].ep, all[j].ep) == 0; j++ {
			if !all[j].ep.Terminating {
				pick = j
			}
		}
		out = append(out, all[pick])
		i = j
	}
	return out
}

// TestMergeRunsMatchesAStableSort: any number of sorted runs (none, one,
// odd counts, empty runs, the same ip:port in several runs with different
// conditions) merge to what sorting them would give, with buffers reused
// from one case to the next as a Builder reuses them.
func TestMergeRunsMatchesAStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 1))
	var sc scratch
	for trial := range 2000 {
		runs := make([][]candidate, r.IntN(9))
		for i := range runs {
			run := make([]candidate, r.IntN(40))
			for k := range run {
				run[k].ep = graph.Endpoint{
					IP:          netip.AddrFrom4([4]byte{10, 0, 0, byte(r.IntN(30))}),
					Port:        uint16(80 + r.IntN(2)),
					Ready:       r.IntN(2) == 0,
					Terminating: r.IntN(3) == 0,
				}
				run[k].hints = &object.Hints{ForZones: []string{fmt.Sprint(trial, i, k)}} // tells copies apart
			}
			slices.SortStableFunc(run, func(a, b candidate) int { return graph.CompareEndpoints(a.ep, b.ep) })
			runs[i] = run
		}
		sc.merged, sc.bounds = sc.merged[:0], sc.bounds[:0]
		for _, run := range runs {
			sc.bounds = append(sc.bounds, len(sc.merged))
			sc.merged = append(sc.merged, run...)
		}
		sc.bounds = append(sc.bounds, len(sc.merged))
		got := dedup(mergeRuns(sc.merged, &sc.spare, sc.bounds))
		if want := referenceMerge(runs); !slices.Equal(got, want) {
			t.Fatalf("trial %d, %d runs: merged\n%v\nwant\n%v", trial, len(runs), got, want)
		}
	}
}

// TestBuilderReuseIsInvisible: a Builder that has just built other
// Services (larger, smaller, another family, with topology and traffic
// policies) builds each Service exactly as a fresh one does, and what it
// returned before is untouched by what it builds after.
func TestBuilderReuseIsInvisible(t *testing.T) {
	type service struct {
		svc    *v1.Service
		slices []*discovery.EndpointSlice
	}
	large, largeSlices := Large("ns", "large", "node-1", 3000, 1000, true, ETPLocal, Type(v1.ServiceTypeNodePort))
	small, smallSlices := Large("ns", "small", "node-2", 5, 2, false, ITPLocal)
	hinted := Service("ns", "hinted", ClusterIPs("10.96.0.9"), Port("http", v1.ProtocolTCP, 80, 0))
	hintedSlices := []*discovery.EndpointSlice{
		Slice("ns", "hinted-a", "hinted", discovery.AddressTypeIPv4, SlicePort("http", v1.ProtocolTCP, 8080),
			Endpoint("10.1.0.2", ZoneHints("zone-a"), OnNode("node-1")), Endpoint("10.1.0.1", ZoneHints("zone-b"), OnNode("node-2"))),
		Slice("ns", "hinted-b", "hinted", discovery.AddressTypeIPv4, SlicePort("http", v1.ProtocolTCP, 8080),
			Endpoint("10.1.0.2", Terminating), Endpoint("10.1.0.3", ZoneHints("zone-a"))),
	}
	sequence := []service{{large, largeSlices}, {small, smallSlices}, {hinted, hintedSlices}, {large, largeSlices[1:]}, {small, smallSlices}}
	node := graph.Node{Name: "node-1", Zone: "zone-a"}
	var conv object.Converter
	reused := NewBuilder(Options{})
	var gots, wants []Result
	for i, s := range sequence {
		var prepared []*PreparedSlice
		for _, sl := range s.slices {
			prepared = append(prepared, PrepareSlice(conv.EndpointSlice(sl), Options{}))
		}
		got := reused.ServicePorts(conv.Service(s.svc), prepared, node)
		want := fromAPI(s.svc, s.slices, node, Options{})
		gots, wants = append(gots, got), append(wants, want)
		sameResult(t, fmt.Sprintf("build %d (%s)", i, s.svc.Name), got, want)
	}
	for i := range gots {
		sameResult(t, fmt.Sprintf("build %d, after the others", i), gots[i], wants[i])
	}
}

func sameResult(t *testing.T, what string, got, want Result) {
	t.Helper()
	if len(got.Ports) != len(want.Ports) || !slices.Equal(got.Rejections, want.Rejections) {
		t.Fatalf("%s: %d ports, rejections %v; fresh: %d, %v", what, len(got.Ports), got.Rejections, len(want.Ports), want.Rejections)
	}
	for k := range got.Ports {
		if !graph.Equal(got.Ports[k], want.Ports[k]) {
			t.Fatalf("%s: port %s differs from a fresh Builder's", what, got.Ports[k].Name)
		}
	}
}
