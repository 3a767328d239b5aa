package build

import (
	"cmp"
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// scratch is the working space of a build: lists that never leave it. A
// Builder keeps it between builds, so that a Service's rebuild allocates
// only what the graph keeps (a change of a 50 000-endpoint Service made
// 9 MB of garbage when these were fresh each time). Its buffers grow to
// the largest Service built and stay that size.
type scratch struct {
	order          []*PreparedSlice    // the Service's slices in name order
	bounds         []int               // where each sorted run starts in runs, then len(runs)
	runs, spare    []sourced           // a port's endpoints, merged from its runs (two buffers: merging alternates)
	next           []sourced           // where a kept list is merged with a slice's new version
	merged         []candidate         // the same, deduplicated
	cluster, local []candidate         // categorize's lists
	flat           [3][]graph.Endpoint // a service port's lists (internalList...) before they are graph lists
	patchGone      []sourced           // patchedPort's copies of the gone versions' entries
	patchNew       []sourcedPair       // and the entries replaced in place
	patchKeys      []graph.Endpoint    // and the ip:ports whose copies changed
	patchChanges   []keyChange         // and their winners
	patchRemove    [3][]graph.Endpoint // and what each list loses
	patchAdd       [3][]graph.Endpoint // and gains
}

// sourced is a candidate with the slice port it came from: the order of
// copies of one ip:port, and what a slice's change takes out.
type sourced struct {
	c     candidate
	slice string // the slice's name (not the slice: a kept entry must not keep an old version alive)
	port  int    // index in the slice's ports
}

// compareSourced orders by ip:port, then copies of one ip:port in visit
// order: slices by name, then a slice's ports in its order. (Copies from
// one slice port keep their order: merges are stable.)
func compareSourced(a, b *sourced) int {
	if c := graph.CompareEndpoints(a.c.ep, b.c.ep); c != 0 {
		return c
	}
	if c := cmp.Compare(a.slice, b.slice); c != 0 {
		return c
	}
	return a.port - b.port
}

// inNameOrder sets sc.order to the slices sorted by name: builds visit
// slices in name order, so a result never depends on the order a caller
// keeps them in.
func (sc *scratch) inNameOrder(sl []*PreparedSlice) {
	sc.order = append(sc.order[:0], sl...)
	slices.SortFunc(sc.order, func(a, b *PreparedSlice) int { return cmp.Compare(a.Name, b.Name) })
}

// sortedRuns returns the endpoints of every port matching key of the
// given slices (in name order), sorted by compareSourced. The list lives
// in sc until the next call. Each slice port is a run already sorted by
// address (PrepareSlice), so the runs are merged, not sorted: O(n log
// runs) and no allocation once the buffers have grown.
func (sc *scratch) sortedRuns(from []*PreparedSlice, key portKey, node string) []sourced {
	total := 0
	for _, s := range from {
		for _, sp := range s.ports {
			if sp.key == key {
				total += len(s.endpoints)
			}
		}
	}
	if cap(sc.runs) < total {
		sc.runs = make([]sourced, 0, total)
	}
	list, bounds := sc.runs[:0], sc.bounds[:0]
	for _, s := range from {
		for i, sp := range s.ports {
			if sp.key != key {
				continue
			}
			bounds = append(bounds, len(list))
			for k := range s.endpoints {
				list = append(list, sourced{c: s.endpoints[k].candidate(sp.port, node), slice: s.Name, port: i})
			}
		}
	}
	sc.runs, sc.bounds = list, append(bounds, len(list))
	return mergeRuns(list, &sc.spare, sc.bounds)
}

// candidate is the endpoint at one port.
func (e *sliceEndpoint) candidate(port uint16, node string) candidate {
	return candidate{
		ep: graph.Endpoint{
			IP: e.ip, Port: port, Place: e.place, Local: node != "" && e.place.Node() == node,
			Ready: e.ready, Serving: e.serving, Terminating: e.terminate,
		},
		hints: e.hints,
	}
}

// runsOf counts the runs of key in the slices.
func runsOf(from []*PreparedSlice, key portKey) int {
	n := 0
	for _, s := range from {
		for _, sp := range s.ports {
			if sp.key == key {
				n++
			}
		}
	}
	return n
}

// mergeRuns sorts list, made of runs sorted by compareSourced that start
// at bounds[i] (the last bound is len(list)), by merging neighbouring runs
// until one is left; on a tie the earlier run's entry comes first. *spare
// is the second buffer; the result is in whichever of the two the last
// pass wrote. bounds is overwritten.
func mergeRuns(list []sourced, spare *[]sourced, bounds []int) []sourced {
	if len(bounds) <= 2 {
		return list
	}
	if cap(*spare) < len(list) {
		*spare = make([]sourced, len(list))
	}
	src, dst := list, (*spare)[:len(list)]
	for len(bounds) > 2 {
		n := 0
		for i := 0; i+1 < len(bounds); i += 2 {
			lo, mid, hi := bounds[i], bounds[i+1], bounds[i+1]
			if i+2 < len(bounds) {
				hi = bounds[i+2]
			}
			mergeTwo(dst[lo:hi], src[lo:mid], src[mid:hi])
			bounds[n] = lo // n <= i: every bound still to be read is further on
			n++
		}
		bounds[n] = bounds[len(bounds)-1]
		bounds = bounds[:n+1]
		src, dst = dst, src
	}
	return src
}

// mergeTwo merges the sorted a and b into dst (len(a)+len(b) long), a's
// entry first on a tie.
func mergeTwo(dst, a, b []sourced) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if compareSourced(&a[i], &b[j]) <= 0 {
			dst[k] = a[i]
			i++
		} else {
			dst[k] = b[j]
			j++
		}
		k++
	}
	k += copy(dst[k:], a[i:])
	copy(dst[k:], b[j:])
}

// dedup returns one candidate per ip:port of a sorted list, in *buf: the
// last non-terminating copy in visit order if there is one, else the first
// (the outcome of upstream's "overwrite unless terminating" loop, over
// EndpointSliceCache's slices).
func dedup(buf *[]candidate, list []sourced) []candidate {
	if cap(*buf) < len(list) {
		*buf = make([]candidate, 0, len(list))
	}
	out := (*buf)[:0]
	for i := 0; i < len(list); {
		n, pick := copiesAt(list[i:])
		out = append(out, list[i+pick].c)
		i += n
	}
	*buf = out
	return out
}

// copiesAt returns how many entries at the start of list are copies of
// its first one's ip:port, and which of them wins (dedup's rule).
func copiesAt(list []sourced) (n, pick int) {
	n = 1
	for n < len(list) && list[n].c.ep.IP == list[0].c.ep.IP && list[n].c.ep.Port == list[0].c.ep.Port {
		if !list[n].c.ep.Terminating {
			pick = n
		}
		n++
	}
	return n, pick
}
