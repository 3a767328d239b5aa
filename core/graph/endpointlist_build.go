package graph

import "slices"

// listBuilder makes an EndpointList's parts.
type listBuilder struct {
	parts []listPart
}

func (b *listBuilder) list() EndpointList { return EndpointList{parts: b.parts} }

func (b *listBuilder) len() int {
	if len(b.parts) == 0 {
		return 0
	}
	return b.parts[len(b.parts)-1].end
}

// fresh makes the parts of eps, copied into one array.
func (b *listBuilder) fresh(eps []Endpoint) {
	if len(eps) > 0 {
		b.cut(slices.Clone(eps))
	}
}

// reusing makes the parts of eps, taking each part of prev that eps holds
// at some point as it is (compared only where its first endpoint is), and
// copying the stretches in between. A stretch shorter than minPart
// between two parts taken as they are takes the next one with it (or
// joins the one before), so pieces never accumulate.
func (b *listBuilder) reusing(prev EndpointList, eps []Endpoint) {
	i, k, pending := 0, 0, 0 // eps[pending:i] is not in a part yet
	for i < len(eps) {
		for k < len(prev.parts) && CompareEndpoints(prev.parts[k].eps[0], eps[i]) < 0 {
			k++
		}
		if k == len(prev.parts) {
			break // nothing further can be shared
		}
		p := prev.parts[k].eps
		if p[0] != eps[i] || i+len(p) > len(eps) || !slices.Equal(p, eps[i:i+len(p)]) {
			i++
			continue
		}
		stretch := eps[pending:i]
		if len(stretch) > 0 && len(stretch) < minPart && !b.joinsLast(stretch) {
			i, k = i+len(p), k+1 // p is copied with the stretch
			continue
		}
		b.emit(stretch)
		b.add(p)
		i, k = i+len(p), k+1
		pending = i
	}
	b.emit(eps[pending:])
}

// joinsLast reports whether a stretch would be joined to the last part
// (emit): that part is of its family and one of the two is short.
func (b *listBuilder) joinsLast(stretch []Endpoint) bool {
	if len(b.parts) == 0 {
		return false
	}
	last := b.parts[len(b.parts)-1].eps
	return (len(stretch) < minPart || len(last) < minPart) &&
		FamilyOf(last[len(last)-1].IP) == FamilyOf(stretch[0].IP)
}

// emit adds a stretch of new endpoints (copied), joined to the last part
// when one of them is short.
func (b *listBuilder) emit(stretch []Endpoint) {
	if len(stretch) == 0 {
		return
	}
	var arr []Endpoint
	if b.joinsLast(stretch) {
		last := b.parts[len(b.parts)-1].eps
		b.parts = b.parts[:len(b.parts)-1]
		arr = make([]Endpoint, 0, len(last)+len(stretch))
		arr = append(arr, last...)
	}
	b.cut(append(arr, stretch...))
}

// cut adds arr (owned by the list from now on) as parts: a part per run
// of one family, split into pieces of at most partSize of near-equal
// lengths (so at least partSize/2 when a run is split).
func (b *listBuilder) cut(arr []Endpoint) {
	for len(arr) > 0 {
		fam := FamilyOf(arr[0].IP)
		n := 1
		for n < len(arr) && FamilyOf(arr[n].IP) == fam {
			n++
		}
		pieces := (n + partSize - 1) / partSize
		for i := range pieces {
			lo, hi := n*i/pieces, n*(i+1)/pieces
			b.add(arr[lo:hi:hi])
		}
		arr = arr[n:]
	}
}

// add appends a part.
func (b *listBuilder) add(eps []Endpoint) {
	b.parts = append(b.parts, listPart{eps: eps, end: b.len() + len(eps)})
}

// patching makes the parts of l with the endpoints of remove taken out
// and those of add put in (see EndpointList.Patch). Parts neither reaches
// are taken as they are, as reusing does.
func (b *listBuilder) patching(l EndpointList, remove, add []Endpoint) bool {
	var stretch []Endpoint // changed endpoints not in a part yet (our own copy)
	for k, p := range l.parts {
		// Part k takes the changes below the next part's first endpoint.
		r, a := len(remove), len(add)
		if k+1 < len(l.parts) {
			next := l.parts[k+1].eps[0]
			r = countBelow(remove, next)
			a = countBelow(add, next)
		}
		if r == 0 && a == 0 {
			if len(stretch) > 0 && len(stretch) < minPart && !b.joinsLast(stretch) {
				stretch = append(stretch, p.eps...) // too short to stand alone: p goes with it
				continue
			}
			b.emit(stretch)
			stretch = nil
			b.add(p.eps)
			continue
		}
		var ok bool
		if stretch, ok = mergePatch(stretch, p.eps, remove[:r], add[:a]); !ok {
			return false
		}
		remove, add = remove[r:], add[a:]
	}
	if len(l.parts) == 0 {
		if len(remove) > 0 {
			return false
		}
		stretch = append(stretch, add...)
	}
	b.emit(stretch)
	return true
}

// countBelow counts the endpoints of sorted that come before e.
func countBelow(sorted []Endpoint, e Endpoint) int {
	n := 0
	for n < len(sorted) && CompareEndpoints(sorted[n], e) < 0 {
		n++
	}
	return n
}

// mergePatch appends to dst the endpoints of eps, those of remove taken
// out and those of add put in, in order. It fails when an endpoint of
// remove is not in eps, or one of add is (and is not removed).
func mergePatch(dst, eps, remove, add []Endpoint) ([]Endpoint, bool) {
	i, r, a := 0, 0, 0
	for i < len(eps) || a < len(add) {
		switch {
		case r < len(remove) && i < len(eps) && eps[i] == remove[r]:
			i, r = i+1, r+1
		case a < len(add) && (i == len(eps) || CompareEndpoints(add[a], eps[i]) < 0):
			dst = append(dst, add[a])
			a++
		case a < len(add) && CompareEndpoints(add[a], eps[i]) == 0:
			return nil, false // already there
		default:
			dst = append(dst, eps[i])
			i++
		}
	}
	return dst, r == len(remove)
}
