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
// way: the runs concatenated in visit order, sorted stably by ip:port, one
// kept per ip:port (the last non-terminating copy, else the first).
func referenceMerge(runs [][]sourced) []candidate {
	all := slices.Concat(runs...)
	slices.SortStableFunc(all, func(a, b sourced) int { return graph.CompareEndpoints(a.c.ep, b.c.ep) })
	var out []candidate
	for i := 0; i < len(all); {
		j, pick := i+1, i
		for ; j < len(all) && graph.CompareEndpoints(all[i].c.ep, all[j].c.ep) == 0; j++ {
			if !all[j].c.ep.Terminating {
				pick = j
			}
		}
		out = append(out, all[pick].c)
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
		runs := make([][]sourced, r.IntN(9))
		for i := range runs {
			from := fmt.Sprintf("slice-%02d", i) // runs in visit order
			run := make([]sourced, r.IntN(40))
			for k := range run {
				run[k].slice = from
				run[k].c.ep = graph.Endpoint{
					IP:          netip.AddrFrom4([4]byte{10, 0, 0, byte(r.IntN(30))}),
					Port:        uint16(80 + r.IntN(2)),
					Ready:       r.IntN(2) == 0,
					Terminating: r.IntN(3) == 0,
				}
				run[k].c.hints = &object.Hints{ForZones: []string{fmt.Sprint(trial, i, k)}} // tells copies apart
			}
			slices.SortStableFunc(run, func(a, b sourced) int { return graph.CompareEndpoints(a.c.ep, b.c.ep) })
			runs[i] = run
		}
		sc.runs, sc.bounds = sc.runs[:0], sc.bounds[:0]
		for _, run := range runs {
			sc.bounds = append(sc.bounds, len(sc.runs))
			sc.runs = append(sc.runs, run...)
		}
		sc.bounds = append(sc.bounds, len(sc.runs))
		got := dedup(&sc.merged, mergeRuns(sc.runs, &sc.spare, sc.bounds))
		if want := referenceMerge(runs); !slices.Equal(got, want) {
			t.Fatalf("trial %d, %d runs: merged\n%v\nwant\n%v", trial, len(runs), got, want)
		}
	}
}

// TestKeptMergeMatchesAFreshBuild: a Service of many slices changing one
// slice at a time (a new version, a slice added, a slice gone, several at
// once, the node renamed), built each time with the Merged of the builds
// before, is exactly what a fresh build of the same slices gives. The
// slices overlap: copies of an endpoint in several slices, some of them
// terminating, and two slice ports of one name and protocol.
func TestKeptMergeMatchesAFreshBuild(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 2))
	svc := Service("ns", "web", ClusterIPs("10.96.0.10", "fd00::10"), Port("http", v1.ProtocolTCP, 80, 0), Port("dns", v1.ProtocolUDP, 53, 0))
	randomSlice := func(name string) *discovery.EndpointSlice {
		fam, ip := discovery.AddressTypeIPv4, func(k int) string { return fmt.Sprintf("10.1.0.%d", k) }
		if r.IntN(4) == 0 {
			fam, ip = discovery.AddressTypeIPv6, func(k int) string { return fmt.Sprintf("fd00:1::%x", k) }
		}
		opts := []SliceOption{SlicePort("http", v1.ProtocolTCP, 8080)}
		if r.IntN(3) == 0 {
			opts = append(opts, SlicePort("dns", v1.ProtocolUDP, 5353))
		}
		if r.IntN(8) == 0 {
			opts = append(opts, SlicePort("http", v1.ProtocolTCP, 8081))
		}
		for range r.IntN(60) {
			var eo []EndpointOption
			switch r.IntN(5) {
			case 0:
				eo = append(eo, Terminating)
			case 1:
				eo = append(eo, NotReady)
			}
			eo = append(eo, OnNode(fmt.Sprintf("node-%d", r.IntN(3))))
			opts = append(opts, Endpoint(ip(r.IntN(80)), eo...))
		}
		return Slice("ns", name, "web", fam, opts...)
	}
	current := map[string]*discovery.EndpointSlice{}
	prepared := map[string]*PreparedSlice{}
	set := func(name string) {
		current[name] = randomSlice(name)
		prepared[name] = PrepareSlice(object.EndpointSliceOf(current[name]), Options{})
	}
	for i := range 12 {
		set(fmt.Sprintf("web-%02d", i))
	}
	b := NewBuilder(Options{})
	var m Merged
	node := graph.Node{Name: "node-1"}
	for step := range 300 {
		switch k := r.IntN(10); {
		case k < 6:
			set(fmt.Sprintf("web-%02d", r.IntN(14))) // a new version, or a new slice
		case k < 8 && len(current) > 1:
			for name := range current { // one gone
				delete(current, name)
				delete(prepared, name)
				break
			}
		case k == 8:
			for range 5 {
				set(fmt.Sprintf("web-%02d", r.IntN(14)))
			}
		}
		if step == 150 {
			node.Name = "node-2" // Local changes for every endpoint
		}
		var raw []*discovery.EndpointSlice
		var ps []*PreparedSlice
		for name, s := range current {
			raw, ps = append(raw, s), append(ps, prepared[name])
		}
		got := b.ServicePorts(object.ServiceOf(svc), ps, node, &m)
		sameResult(t, fmt.Sprintf("step %d", step), got, fromAPI(svc, raw, node, Options{}))
	}
	if len(m.ports) == 0 {
		t.Fatal("nothing was kept: the kept path was never taken")
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
		got := reused.ServicePorts(conv.Service(s.svc), prepared, node, nil)
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

// TestAChangeSharesTheLists: one endpoint of a 10 000-endpoint dual-stack
// Service with external IPs (ten slices a family) going not ready makes new lists
// that share every part with the last build's but the one or two that
// endpoint was in, and its external list is its internal list.
func TestAChangeSharesTheLists(t *testing.T) {
	svc, sl := Large("ns", "large", "node-1", 10_000, 1000, true, ExternalIPs("192.0.2.10", "2001:db8::10"))
	var conv object.Converter
	prepared := make([]*PreparedSlice, len(sl))
	for i, s := range sl {
		prepared[i] = PrepareSlice(conv.EndpointSlice(s), Options{})
	}
	b, node := NewBuilder(Options{}), graph.Node{Name: "node-1"}
	var m Merged
	before := b.ServicePorts(conv.Service(svc), prepared, node, &m).Ports[0]
	changed := sl[3].DeepCopy()
	notReady := false
	changed.Endpoints[500].Conditions.Ready = &notReady
	prepared[3] = PrepareSlice(conv.EndpointSlice(changed), Options{})
	after := b.ServicePorts(conv.Service(svc), prepared, node, &m).Ports[0]

	if got, want := after.InternalEndpoints.Len(), before.InternalEndpoints.Len()-1; got != want {
		t.Fatalf("%d endpoints after the change, want %d", got, want)
	}
	parts, fresh := 0, 0
	for p := range after.InternalEndpoints.Parts() {
		parts++
		old := false
		for q := range before.InternalEndpoints.Parts() {
			old = old || graph.SamePart(p, q)
		}
		if !old {
			fresh++
		}
	}
	if fresh == 0 || fresh > 2 {
		t.Errorf("%d of %d parts are new after one endpoint's change, want 1 or 2", fresh, parts)
	}
	for p := range after.ExternalEndpoints.Parts() {
		if !slices.ContainsFunc(slices.Collect(after.InternalEndpoints.Parts()), func(q []graph.Endpoint) bool { return graph.SamePart(p, q) }) {
			t.Fatal("the external list is not the internal one")
		}
	}
	sameResult(t, "after the change", Result{Ports: []*graph.ServicePort{after}}, fromAPI(svc, append(append(slices.Clone(sl[:3]), changed), sl[4:]...), node, Options{}))
}
