package build

import (
	"cmp"
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// scratch is the working space of a build: candidate lists that never
// leave it. A Builder keeps it between builds, so that a Service's rebuild
// allocates only what the graph keeps (a change of a 50 000-endpoint
// Service made 9 MB of garbage when these were fresh each time). Its
// buffers grow to the largest Service built and stay that size.
type scratch struct {
	order          []*PreparedSlice // the Service's slices in name order
	bounds         []int            // where each sorted run starts in merged, then len(merged)
	merged, spare  []candidate      // a port's endpoints, merged from its runs (two buffers: merging alternates)
	cluster, local []candidate      // categorize's lists
}

// inNameOrder sets sc.order to the slices sorted by name: builds visit
// slices in name order, so a result never depends on the order a caller
// keeps them in.
func (sc *scratch) inNameOrder(sl []*PreparedSlice) {
	sc.order = append(sc.order[:0], sl...)
	slices.SortFunc(sc.order, func(a, b *PreparedSlice) int { return cmp.Compare(a.Name, b.Name) })
}

// candidates merges the endpoints of every slice port matching key into one
// deduplicated list, sorted by ip:port, as upstream's EndpointSliceCache
// does: an endpoint is keyed by ip:port; when several slices carry the same
// one, a non-terminating copy wins over a terminating one. node is the
// graph's node ("": none is local). The list lives in sc until the next
// call.
//
// Each slice port is a run already sorted by address (PrepareSlice), so
// the runs are merged, not sorted: O(n log runs) moves and no allocation
// once the buffers have grown.
func (sc *scratch) candidates(key portKey, node string) []candidate {
	total := 0
	for _, s := range sc.order {
		for _, sp := range s.ports {
			if sp.key == key {
				total += len(s.endpoints)
			}
		}
	}
	if cap(sc.merged) < total {
		sc.merged = make([]candidate, 0, total)
	}
	merged, bounds := sc.merged[:0], sc.bounds[:0]
	for _, s := range sc.order {
		for _, sp := range s.ports {
			if sp.key != key {
				continue
			}
			bounds = append(bounds, len(merged))
			for i := range s.endpoints {
				merged = append(merged, s.endpoints[i].candidate(sp.port, node))
			}
		}
	}
	sc.bounds = append(bounds, len(merged))
	return dedup(mergeRuns(merged, &sc.spare, sc.bounds))
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

// mergeRuns sorts list, made of sorted runs that start at bounds[i] (the
// last bound is len(list)), by merging neighbouring runs until one is
// left. The sort is stable: on a tie the earlier run's endpoint comes
// first, as if the runs were concatenated and sorted stably. *spare is the
// second buffer; the result is in whichever of the two the last pass wrote.
// bounds is overwritten.
func mergeRuns(list []candidate, spare *[]candidate, bounds []int) []candidate {
	if len(bounds) <= 2 {
		return list
	}
	if cap(*spare) < len(list) {
		*spare = make([]candidate, len(list))
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
// endpoint first on a tie.
func mergeTwo(dst, a, b []candidate) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if graph.CompareEndpoints(a[i].ep, b[j].ep) <= 0 {
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

// dedup keeps one candidate per ip:port of a sorted list, in place: the
// last non-terminating copy in visit order if there is one, else the first
// (the outcome of upstream's "overwrite unless terminating" loop).
func dedup(list []candidate) []candidate {
	out := list[:0]
	for i := 0; i < len(list); {
		j, pick := i+1, i
		for j < len(list) && graph.CompareEndpoints(list[i].ep, list[j].ep) == 0 {
			if !list[j].ep.Terminating {
				pick = j
			}
			j++
		}
		out = append(out, list[pick])
		i = j
	}
	return out
}
