package build

import (
	"slices"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
)

// Merged is what the last build of a Service merged from its slices, kept
// for the next build of the same Service by whoever keeps the Service (the
// tracker). With it, a change of one slice of a Service of many slices is
// merged into the last result in one pass (out with the old version's
// endpoints, in with the new one's), not by merging every slice again: at
// 50 000 endpoints that was most of a change's cost in the core.
//
// Only service ports whose endpoints come from two slice ports or more are
// kept (one needs no merging), so a cluster of small Services keeps
// nothing of that. It also holds the service ports the last build made,
// whose endpoint lists the next one shares the parts of
// (graph.EndpointList.Update). The zero value is empty; only a Builder
// reads or writes it.
type Merged struct {
	node  string           // the node the candidates were made for (Local)
	zone  string           // and its zone (topology)
	svc   *object.Service  // the Service the last build was of
	from  []*PreparedSlice // the slices every kept list was merged from
	ports []keptPort
	last  []*graph.ServicePort
}

// keptPort is one service port's merged endpoints: sorted by
// compareSourced, copies of an ip:port not yet deduplicated.
type keptPort struct {
	key     portKey
	list    []sourced
	counts  [2]familyCounts // over the deduplicated list, IPv4 and IPv6 (patch.go)
	counted bool            // counts are the list's
	used    bool            // by the build under way
}

// sliceChanges is what changed in a Service's slices since its Merged was
// made: versions gone (removed or replaced) and versions new, in name
// order.
type sliceChanges struct {
	gone, added []*PreparedSlice
	rebuild     bool // too much changed (or the node did): merge everything again
}

// changesSince compares the slices a build visits (in name order) with
// those m was merged from. Slices are compared by identity: a new version
// of a slice is a new PreparedSlice.
func changesSince(m *Merged, order []*PreparedSlice, node string) sliceChanges {
	var ch sliceChanges
	for _, s := range m.from {
		if !slices.Contains(order, s) {
			ch.gone = append(ch.gone, s)
		}
	}
	for _, s := range order {
		if !slices.Contains(m.from, s) {
			ch.added = append(ch.added, s)
		}
	}
	// Past half the slices, one merge of all of them costs less than
	// taking out and putting in.
	ch.rebuild = m.node != node || 2*(len(ch.gone)+len(ch.added)) > len(order)
	return ch
}

// keptCandidates is sortedRuns for a service port of a Service with a
// Merged: it updates the kept list and returns it.
func (sc *scratch) keptCandidates(m *Merged, ch sliceChanges, key portKey, node string) []sourced {
	i := slices.IndexFunc(m.ports, func(p keptPort) bool { return p.key == key })
	fresh := i < 0
	if fresh {
		m.ports = append(m.ports, keptPort{key: key})
		i = len(m.ports) - 1
	}
	kp := &m.ports[i]
	kp.used, kp.counted = true, false
	if fresh || ch.rebuild {
		kp.list = append(kp.list[:0], sc.sortedRuns(sc.order, key, node)...)
		return kp.list
	}
	// One pass: the kept list without the gone versions' entries, merged
	// with the added ones (a kept entry first on a tie, as mergeTwo).
	kept, added := kp.list, sc.sortedRuns(ch.added, key, node)
	if cap(sc.next) < len(kept)+len(added) {
		sc.next = make([]sourced, 0, len(kept)+len(added))
	}
	out := sc.next[:0]
	for i, j := 0, 0; i < len(kept) || j < len(added); {
		switch {
		case i < len(kept) && slices.ContainsFunc(ch.gone, func(s *PreparedSlice) bool { return s.Name == kept[i].slice }):
			i++
		case j == len(added) || i < len(kept) && compareSourced(&kept[i], &added[j]) <= 0:
			out = append(out, kept[i])
			i++
		default:
			out = append(out, added[j])
			j++
		}
	}
	kp.list, sc.next = out, kept[:0] // the old list's array is the next merge's
	return kp.list
}

// lastPort is the service port of the last build for p (nil: none, or
// m is nil).
func (m *Merged) lastPort(p portInfo) *graph.ServicePort {
	if m == nil {
		return nil
	}
	for _, sp := range m.last {
		if sp.Name.Port == p.name && sp.Name.Protocol == p.protocol {
			return sp
		}
	}
	return nil
}

// finish records what m now holds: the lists of this build's service
// ports, merged from its slices, and the service ports made.
func (m *Merged) finish(order []*PreparedSlice, node graph.Node, svc *object.Service, made []*graph.ServicePort) {
	m.last, m.svc, m.zone = made, svc, node.Zone
	m.ports = slices.DeleteFunc(m.ports, func(p keptPort) bool { return !p.used })
	for i := range m.ports {
		m.ports[i].used = false
	}
	m.from = append(m.from[:0], order...)
	m.node = node.Name
}
