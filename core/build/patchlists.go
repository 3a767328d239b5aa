package build

import (
	"sort"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// sourcedPair is a kept entry's old and new version (the same slice,
// slice port and ip:port).
type sourcedPair struct{ old, new sourced }

// changedCopies compares the gone versions' entries with the added
// ones (both sorted by compareSourced): the entries changed in place (one
// slice's copy of an ip:port, another value), whether that is all (no
// copy came or went), and every ip:port whose copies changed (sorted, in
// *keys).
func changedCopies(gone, added []sourced, buf *[]sourcedPair, keys *[]graph.Endpoint) ([]sourcedPair, bool) {
	out, inPlace := (*buf)[:0], true
	*keys = (*keys)[:0]
	changed := func(e *sourced) {
		k := graph.Endpoint{IP: e.c.ep.IP, Port: e.c.ep.Port}
		if n := len(*keys); n == 0 || (*keys)[n-1] != k {
			*keys = append(*keys, k)
		}
	}
	i, j := 0, 0
	for i < len(gone) || j < len(added) {
		c := 0
		switch {
		case i == len(gone):
			c = 1
		case j == len(added):
			c = -1
		default:
			c = compareSourced(&gone[i], &added[j])
		}
		switch {
		case c == 0:
			if !sameCandidate(&gone[i].c, &added[j].c) {
				out = append(out, sourcedPair{gone[i], added[j]})
				changed(&gone[i])
			}
			i, j = i+1, j+1
		case c < 0:
			changed(&gone[i])
			inPlace, i = false, i+1
		default:
			changed(&added[j])
			inPlace, j = false, j+1
		}
	}
	*buf = out
	return out, inPlace
}

// sameCandidate: the same endpoint and hints.
func sameCandidate(a, b *candidate) bool {
	if a.ep != b.ep {
		return false
	}
	if a.hints == b.hints {
		return true
	}
	if a.hints == nil || b.hints == nil {
		return false
	}
	return equalStrings(a.hints.ForZones, b.hints.ForZones) && equalStrings(a.hints.ForNodes, b.hints.ForNodes)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// firstCopy is where the copies of key's ip:port start in list (sorted by
// compareSourced), or where they would.
func firstCopy(list []sourced, key graph.Endpoint) int {
	return sort.Search(len(list), func(i int) bool { return graph.CompareEndpoints(list[i].c.ep, key) >= 0 })
}

// winnerOf is the winning copy of key's ip:port in list (dedup's rule).
func winnerOf(list []sourced, key graph.Endpoint) (candidate, bool) {
	i := firstCopy(list, key)
	if i == len(list) || list[i].c.ep.IP != key.IP || list[i].c.ep.Port != key.Port {
		return candidate{}, false
	}
	_, pick := copiesAt(list[i:])
	return list[i+pick].c, true
}

// replaceInPlace writes each pair's new entry over its old one in list;
// false (list untouched) if an old entry is not there.
func replaceInPlace(list []sourced, pairs []sourcedPair) bool {
	at := make([]int, len(pairs))
	for k := range pairs {
		i := sort.Search(len(list), func(i int) bool { return compareSourced(&list[i], &pairs[k].old) >= 0 })
		if i == len(list) || compareSourced(&list[i], &pairs[k].old) != 0 || !sameCandidate(&list[i].c, &pairs[k].old.c) {
			return false
		}
		at[k] = i
	}
	for k, i := range at {
		list[i] = pairs[k].new
	}
	return true
}

// patchLists makes the port's lists from prev's and the changed keys,
// under the choices counts give (unchanged since prev was built).
func (si *serviceInfo) patchLists(p portInfo, prev *graph.ServicePort, changes []keyChange, counts [2]familyCounts, node graph.Node, sc *scratch) (*graph.ServicePort, bool) {
	sp := si.bareServicePort(p)
	externalIsInternal, shortCircuitIsInternal := si.listsShared(p)
	for i := range sc.patchRemove {
		sc.patchRemove[i], sc.patchAdd[i] = sc.patchRemove[i][:0], sc.patchAdd[i][:0]
	}
	for _, fam := range si.families.List() {
		f := familyIndex(fam)
		if counts[f].hasAny() {
			sp.UsableFamilies = sp.UsableFamilies.With(fam)
		}
		in := si.membership(p, fam, choiceOf(counts[f]), node, externalIsInternal, shortCircuitIsInternal)
		for i := range changes {
			c := &changes[i]
			if graph.FamilyOf(c.key.IP) != fam {
				continue
			}
			for l, member := range in {
				if member == nil {
					continue
				}
				if c.hadWinner && member(&c.before) {
					sc.patchRemove[l] = append(sc.patchRemove[l], c.before.ep)
				}
				if c.hasWinner && member(&c.after) {
					sc.patchAdd[l] = append(sc.patchAdd[l], c.after.ep)
				}
			}
		}
	}
	var ok [3]bool
	sp.InternalEndpoints, ok[0] = prev.InternalEndpoints.Patch(sc.patchRemove[internalList], sc.patchAdd[internalList])
	sp.ExternalEndpoints, ok[1] = sp.InternalEndpoints, true
	if !externalIsInternal {
		sp.ExternalEndpoints, ok[1] = prev.ExternalEndpoints.Patch(sc.patchRemove[externalList], sc.patchAdd[externalList])
	}
	sp.ShortCircuitEndpoints, ok[2] = sp.InternalEndpoints, true
	if !shortCircuitIsInternal {
		sp.ShortCircuitEndpoints, ok[2] = prev.ShortCircuitEndpoints.Patch(sc.patchRemove[shortCircuitList], sc.patchAdd[shortCircuitList])
	}
	return sp, ok[0] && ok[1] && ok[2]
}

// membership is, for each of the port's lists (internalList...), whether
// an endpoint of fam belongs to it under choice c (nil: the list holds
// nothing of fam, or is another list), as servicePort builds them.
func (si *serviceInfo) membership(p portInfo, fam graph.IPFamily, c choice, node graph.Node, externalIsInternal, shortCircuitIsInternal bool) [3]func(*candidate) bool {
	cluster := func(cd *candidate) bool { return c.inCluster(cd, node) }
	local := c.inLocal
	var in [3]func(*candidate) bool
	in[internalList], in[externalList] = cluster, cluster
	if si.itpLocal {
		in[internalList] = local
	}
	if si.etpLocal {
		in[externalList] = local
	}
	accessible := si.externallyAccessible(p, fam)
	if !accessible || externalIsInternal {
		in[externalList] = nil
	}
	if accessible && si.etpLocal && !shortCircuitIsInternal {
		in[shortCircuitList] = cluster
	}
	return in
}
