package graph

import (
	"encoding/json"
	"iter"
	"net/netip"
	"slices"
	"sort"
)

// EndpointList is a service port's endpoint list: sorted (SortEndpoints),
// immutable, and held in parts that successive versions of the list
// share. A change of one endpoint in a 50 000-endpoint Service makes a new
// list that shares every part but the one that endpoint is in: the core
// neither copies nor allocates the other 49 999 (the flat list it used to
// hand over, 1.8 MB at every change, was what set Go's collector off),
// and a driver can tell the parts that did not change by identity.
//
// Parts hold at most partSize endpoints and never two IP families, so the
// endpoints of one family are a run of whole parts. The zero value is the
// empty list. Lists compare with Equal, not ==.
type EndpointList struct {
	parts []listPart
}

// listPart is one part and where it ends in the list.
type listPart struct {
	eps []Endpoint // never empty, never written once in a list
	end int        // endpoints in this part and those before it
}

const (
	// partSize is the most endpoints a part holds.
	partSize = 256
	// minPart is the fewest a part holds when it is not the last of its
	// family: smaller pieces are merged with a neighbour as they are made,
	// so the number of parts stays within ~len/minPart.
	minPart = partSize / 4
)

// EndpointListOf returns a list of eps (copied), which must be in the
// graph's order (SortEndpoints).
func EndpointListOf(eps ...Endpoint) EndpointList {
	var b listBuilder
	b.fresh(eps)
	return b.list()
}

// Len is the number of endpoints.
func (l EndpointList) Len() int {
	if len(l.parts) == 0 {
		return 0
	}
	return l.parts[len(l.parts)-1].end
}

// At is the i-th endpoint (0 <= i < Len).
func (l EndpointList) At(i int) Endpoint {
	k := sort.Search(len(l.parts), func(k int) bool { return l.parts[k].end > i })
	p := l.parts[k]
	return p.eps[i-(p.end-len(p.eps))]
}

// All yields the endpoints in order.
func (l EndpointList) All() iter.Seq[Endpoint] {
	return func(yield func(Endpoint) bool) {
		for _, p := range l.parts {
			for _, e := range p.eps {
				if !yield(e) {
					return
				}
			}
		}
	}
}

// Parts yields the list's parts in order: read-only slices that a later
// version of the list still holds as long as none of their endpoints
// changed (the same backing array: see SamePart).
func (l EndpointList) Parts() iter.Seq[[]Endpoint] {
	return func(yield func([]Endpoint) bool) {
		for _, p := range l.parts {
			if !yield(p.eps) {
				return
			}
		}
	}
}

// SamePart reports whether two parts are one (the same array): then they
// hold the same endpoints.
func SamePart(a, b []Endpoint) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Slice returns the endpoints in a new slice (nil when there are none).
func (l EndpointList) Slice() []Endpoint {
	if l.Len() == 0 {
		return nil
	}
	out := make([]Endpoint, 0, l.Len())
	for _, p := range l.parts {
		out = append(out, p.eps...)
	}
	return out
}

// Equal reports whether two lists hold the same endpoints in the same
// order; parts they share are not compared (a change of one endpoint in
// a list of 50 000 compares the part it is in).
func (l EndpointList) Equal(o EndpointList) bool {
	return l.EqualFunc(o, func(a, b Endpoint) bool { return a == b })
}

// EqualFunc reports whether two lists hold endpoints eq takes as equal,
// pairwise in order; parts they share are not compared (eq must take an
// endpoint as equal to itself).
func (l EndpointList) EqualFunc(o EndpointList, eq func(a, b Endpoint) bool) bool {
	if l.Len() != o.Len() {
		return false
	}
	a, b := listCursor{l: l}, listCursor{l: o}
	for !a.done() {
		if a.atPartStart() && b.atPartStart() && SamePart(a.part(), b.part()) {
			a.skipPart()
			b.skipPart()
			continue
		}
		if !eq(a.take(), b.take()) {
			return false
		}
	}
	return true
}

// Find returns the endpoint at ip:port, if the list holds one.
func (l EndpointList) Find(ip netip.Addr, port uint16) (Endpoint, bool) {
	key := Endpoint{IP: ip, Port: port}
	k := sort.Search(len(l.parts), func(k int) bool {
		p := l.parts[k].eps
		return CompareEndpoints(p[len(p)-1], key) >= 0
	})
	if k == len(l.parts) {
		return Endpoint{}, false
	}
	p := l.parts[k].eps
	i, found := slices.BinarySearchFunc(p, key, CompareEndpoints)
	if !found {
		return Endpoint{}, false
	}
	return p[i], true
}

// OfFamily returns the endpoints of one family: l itself when they all
// are, else a list of l's parts of that family.
func (l EndpointList) OfFamily(f IPFamily) EndpointList {
	lo := 0
	for lo < len(l.parts) && FamilyOf(l.parts[lo].eps[0].IP) != f {
		lo++
	}
	hi := lo
	for hi < len(l.parts) && FamilyOf(l.parts[hi].eps[0].IP) == f {
		hi++
	}
	if lo == 0 && hi == len(l.parts) {
		return l
	}
	var out EndpointList
	for _, p := range l.parts[lo:hi] {
		out.parts = append(out.parts, listPart{eps: p.eps, end: out.Len() + len(p.eps)})
	}
	return out
}

// Update returns the list eps (which must be in the graph's order),
// sharing every part of l that eps still holds unchanged; only the
// stretches of eps that differ from l are copied into new parts.
func (l EndpointList) Update(eps []Endpoint) EndpointList {
	var b listBuilder
	b.reusing(l, eps)
	return b.list()
}

// Patch returns the list with the endpoints of remove taken out and
// those of add put in (each list in the graph's order; an endpoint of add
// may take the place of one of remove with the same address and port).
// Only the parts they reach are copied. It fails (false) when remove
// holds an endpoint the list does not hold as it is, or add one it
// already holds.
func (l EndpointList) Patch(remove, add []Endpoint) (EndpointList, bool) {
	var b listBuilder
	if !b.patching(l, remove, add) {
		return EndpointList{}, false
	}
	return b.list(), true
}

// Changes returns what a version of the list from before (old) lost and
// gained to become l, each in the graph's order (an endpoint whose
// conditions changed is in both). Parts the two versions share are
// skipped, not compared: a change of one endpoint in a list of 50 000
// looks at the part it is in.
func (l EndpointList) Changes(old EndpointList) (removed, added []Endpoint) {
	var a, b listCursor = listCursor{l: old}, listCursor{l: l}
	for !a.done() || !b.done() {
		if a.atPartStart() && b.atPartStart() && SamePart(a.part(), b.part()) {
			a.skipPart()
			b.skipPart()
			continue
		}
		switch {
		case b.done():
			removed = append(removed, a.take())
		case a.done():
			added = append(added, b.take())
		default:
			switch c := CompareEndpoints(a.peek(), b.peek()); {
			case c < 0:
				removed = append(removed, a.take())
			case c > 0:
				added = append(added, b.take())
			default:
				x, y := a.take(), b.take()
				if x != y {
					removed, added = append(removed, x), append(added, y)
				}
			}
		}
	}
	return removed, added
}

// listCursor walks a list endpoint by endpoint.
type listCursor struct {
	l    EndpointList
	k, i int // part k, endpoint i of it
}

func (c *listCursor) done() bool        { return c.k == len(c.l.parts) }
func (c *listCursor) atPartStart() bool { return c.i == 0 && !c.done() }
func (c *listCursor) part() []Endpoint  { return c.l.parts[c.k].eps }
func (c *listCursor) peek() Endpoint    { return c.l.parts[c.k].eps[c.i] }
func (c *listCursor) skipPart()         { c.k, c.i = c.k+1, 0 }
func (c *listCursor) take() (e Endpoint) {
	e = c.peek()
	if c.i++; c.i == len(c.part()) {
		c.skipPart()
	}
	return e
}

// MarshalJSON renders the list as an array.
func (l EndpointList) MarshalJSON() ([]byte, error) {
	out := l.Slice()
	if out == nil {
		out = []Endpoint{}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads an array (sorted here: the graph's lists are).
func (l *EndpointList) UnmarshalJSON(b []byte) error {
	var eps []Endpoint
	if err := json.Unmarshal(b, &eps); err != nil {
		return err
	}
	SortEndpoints(eps)
	*l = EndpointListOf(eps...)
	return nil
}

// String renders the endpoints as "[ip:port ip:port ...]".
func (l EndpointList) String() string {
	var b []byte
	b = append(b, '[')
	for e := range l.All() {
		if len(b) > 1 {
			b = append(b, ' ')
		}
		b = append(b, e.String()...)
	}
	return string(append(b, ']'))
}
