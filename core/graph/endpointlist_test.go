package graph

import (
	"encoding/json"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var addrs = cmpopts.EquateComparable(netip.Addr{}, Place{})

// testEndpoint is endpoint n: IPv4 for n < 1<<20, IPv6 above.
func testEndpoint(n int, ready bool) Endpoint {
	ip := netip.AddrFrom4([4]byte{10, byte(n >> 16), byte(n >> 8), byte(n)})
	if n >= 1<<20 {
		ip = netip.AddrFrom16([16]byte{0xfd, 0, 13: byte(n >> 16), 14: byte(n >> 8), 15: byte(n)})
	}
	return Endpoint{IP: ip, Port: 80, Ready: ready, Serving: ready}
}

// checkParts checks what EndpointList promises of its parts: none empty
// or over partSize, none of two families, none under minPart but the last
// of its family, and ends that add up.
func checkParts(t *testing.T, l EndpointList) {
	t.Helper()
	end := 0
	for k, p := range l.parts {
		fam := FamilyOf(p.eps[0].IP)
		if len(p.eps) == 0 || len(p.eps) > partSize {
			t.Fatalf("part %d holds %d endpoints", k, len(p.eps))
		}
		if slices.ContainsFunc(p.eps, func(e Endpoint) bool { return FamilyOf(e.IP) != fam }) {
			t.Fatalf("part %d mixes families", k)
		}
		lastOfFamily := k == len(l.parts)-1 || FamilyOf(l.parts[k+1].eps[0].IP) != fam
		if len(p.eps) < minPart && !lastOfFamily {
			t.Fatalf("part %d of %d holds %d endpoints, not the last of its family", k, len(l.parts), len(p.eps))
		}
		end += len(p.eps)
		if p.end != end {
			t.Fatalf("part %d ends at %d, holds up to %d", k, p.end, end)
		}
	}
}

// Random versions of a dual-stack list, each made from the last with
// Update: every version holds exactly its endpoints, keeps the parts'
// promises, and shares all but the parts a change reached.
func TestEndpointListUpdate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	present := map[int]bool{}
	for n := range 1500 {
		present[n*3] = true
		present[1<<20+n*3] = true
	}
	flat := func() []Endpoint {
		var out []Endpoint
		for n, ok := range present {
			if ok {
				out = append(out, testEndpoint(n, true))
			}
		}
		SortEndpoints(out)
		return out
	}
	l := EndpointListOf(flat()...)
	checkParts(t, l)
	for round := range 200 {
		changes := 1 + rng.IntN(3)
		if round%50 == 0 {
			changes = 500 // a rollout of a slice's worth
		}
		for range changes {
			n := rng.IntN(4500)
			if rng.IntN(2) == 1 {
				n += 1 << 20
			}
			present[n] = !present[n]
		}
		want := flat()
		next := l.Update(want)
		checkParts(t, next)
		if got := next.Slice(); !slices.Equal(got, want) {
			t.Fatalf("round %d: list (-want +got):\n%s", round, cmp.Diff(want, got, addrs))
		}
		if changes < 4 {
			if fresh := len(next.parts) - shared(next, l); fresh > 2*changes {
				t.Fatalf("round %d: %d changes made %d new parts of %d", round, changes, fresh, len(next.parts))
			}
		}
		if !next.Equal(EndpointListOf(want...)) || next.Len() != len(want) {
			t.Fatalf("round %d: not Equal to a fresh list of the same endpoints", round)
		}
		for _, i := range []int{0, len(want) / 2, len(want) - 1} {
			if next.At(i) != want[i] {
				t.Fatalf("round %d: At(%d) = %v, want %v", round, i, next.At(i), want[i])
			}
		}
		l = next
	}
	if len(l.parts) > 2*l.Len()/minPart+2 {
		t.Fatalf("%d parts for %d endpoints", len(l.parts), l.Len())
	}
}

// shared counts the parts of l that are parts of o too.
func shared(l, o EndpointList) int {
	n := 0
	for _, p := range l.parts {
		if slices.ContainsFunc(o.parts, func(q listPart) bool { return SamePart(p.eps, q.eps) }) {
			n++
		}
	}
	return n
}

func TestEndpointListViews(t *testing.T) {
	var eps []Endpoint
	for n := range 700 {
		eps = append(eps, testEndpoint(n, n%2 == 0))
	}
	for n := range 300 {
		eps = append(eps, testEndpoint(1<<20+n, true))
	}
	l := EndpointListOf(eps...)
	checkParts(t, l)
	v4, v6 := l.OfFamily(IPv4), l.OfFamily(IPv6)
	if diff := cmp.Diff(eps[:700], v4.Slice(), addrs); diff != "" {
		t.Errorf("IPv4 view (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(eps[700:], v6.Slice(), addrs); diff != "" {
		t.Errorf("IPv6 view (-want +got):\n%s", diff)
	}
	for _, i := range []int{0, 255, 256, 699, 700, 999} {
		if got, ok := l.Find(eps[i].IP, eps[i].Port); !ok || got != eps[i] {
			t.Errorf("Find(%s) = %v, %v", eps[i], got, ok)
		}
	}
	if _, ok := l.Find(eps[3].IP, 81); ok {
		t.Error("Find of another port found one")
	}
	if _, ok := (EndpointList{}).Find(eps[0].IP, eps[0].Port); ok {
		t.Error("Find in the empty list found one")
	}
	if v4.At(699) != eps[699] || v6.At(0) != eps[700] {
		t.Error("At in a family view")
	}
	if only := v6.OfFamily(IPv6); !only.Equal(v6) || only.parts[0].end != v6.parts[0].end {
		t.Error("a list of one family is not its own view")
	}
	if l.Equal(v4) || v4.Equal(v6) || !l.Equal(EndpointListOf(eps...)) {
		t.Error("Equal")
	}
	changed := slices.Clone(eps)
	changed[500].Ready = false
	if l.Equal(EndpointListOf(changed...)) {
		t.Error("a changed endpoint compares Equal")
	}
	if (EndpointList{}).Len() != 0 || (EndpointList{}).Slice() != nil || !(EndpointList{}).Equal(EndpointListOf()) {
		t.Error("the empty list")
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var back EndpointList
	if err := json.Unmarshal(b, &back); err != nil || !back.Equal(l) {
		t.Errorf("JSON round trip: %v", err)
	}
	if b, _ := json.Marshal(EndpointList{}); string(b) != "[]" {
		t.Errorf("the empty list's JSON is %s", b)
	}
}

// Random patches of a dual-stack list (endpoints coming, going, changing
// readiness, in place) give exactly the patched endpoints, keep the
// parts' promises, and copy only the parts the changes reach.
func TestEndpointListPatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	state := map[int]Endpoint{}
	for n := range 1500 {
		state[n*3] = testEndpoint(n*3, true)
		state[1<<20+n*3] = testEndpoint(1<<20+n*3, true)
	}
	flat := func() []Endpoint {
		var out []Endpoint
		for _, e := range state {
			out = append(out, e)
		}
		SortEndpoints(out)
		return out
	}
	l := EndpointListOf(flat()...)
	for round := range 200 {
		var remove, add []Endpoint
		changes := 1 + rng.IntN(3)
		if round%50 == 0 {
			changes = 300
		}
		touched := map[int]bool{}
		for range changes {
			n := rng.IntN(4500)
			if rng.IntN(2) == 1 {
				n += 1 << 20
			}
			if touched[n] {
				continue
			}
			touched[n] = true
			old, had := state[n]
			switch {
			case had && rng.IntN(2) == 0: // gone
				remove = append(remove, old)
				delete(state, n)
			case had: // readiness flips, in place
				e := old
				e.Ready = !e.Ready
				remove, add = append(remove, old), append(add, e)
				state[n] = e
			default:
				e := testEndpoint(n, true)
				add = append(add, e)
				state[n] = e
			}
		}
		SortEndpoints(remove)
		SortEndpoints(add)
		next, ok := l.Patch(remove, add)
		if !ok {
			t.Fatalf("round %d: a valid patch failed", round)
		}
		checkParts(t, next)
		want := flat()
		if got := next.Slice(); !slices.Equal(got, want) {
			t.Fatalf("round %d: list (-want +got):\n%s", round, cmp.Diff(want, got, addrs))
		}
		if changes < 4 {
			if fresh := len(next.parts) - shared(next, l); fresh > 2*changes {
				t.Fatalf("round %d: %d changes made %d new parts of %d", round, changes, fresh, len(next.parts))
			}
		}
		if next.Equal(l) != (len(remove)+len(add) == 0) || !next.Equal(EndpointListOf(want...)) {
			t.Fatalf("round %d: Equal to the last version (sharing its parts) = %v after %d changes", round, next.Equal(l), len(remove)+len(add))
		}
		gone, came := next.Changes(l)
		if !slices.Equal(gone, remove) || !slices.Equal(came, add) {
			t.Fatalf("round %d: Changes found %d gone and %d come, the patch took %d out and put %d in", round, len(gone), len(came), len(remove), len(add))
		}
		if gone, came := next.Changes(EndpointListOf(next.Slice()...)); len(gone)+len(came) != 0 {
			t.Fatalf("round %d: Changes between equal lists sharing no part", round)
		}
		l = next
	}
	if len(l.parts) > 2*l.Len()/minPart+2 {
		t.Fatalf("%d parts for %d endpoints", len(l.parts), l.Len())
	}
	held, absent := l.At(10), testEndpoint(1, true)
	stale := held
	stale.Ready = !stale.Ready
	for name, tc := range map[string]struct{ remove, add []Endpoint }{
		"removing an absent endpoint":      {remove: []Endpoint{absent}},
		"removing a stale version":         {remove: []Endpoint{stale}},
		"adding an endpoint already there": {add: []Endpoint{held}},
	} {
		if _, ok := l.Patch(tc.remove, tc.add); ok {
			t.Errorf("%s: the patch did not fail", name)
		}
	}
	if got, ok := (EndpointList{}).Patch(nil, []Endpoint{absent}); !ok || got.Len() != 1 {
		t.Error("a patch of the empty list")
	}
}
