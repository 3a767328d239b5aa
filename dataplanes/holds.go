package dataplanes

import (
	"maps"
	"slices"
	"time"
)

// Holds keep a failure with the part it is of. A driver that cannot
// program one part of the graph (a service port whose flows or load
// balancer the dataplane refuses, a pod's port) holds it back, programs
// the rest, and tries it again after a backoff that doubles from
// HoldFirst to HoldMax, or at the next full sync; meanwhile the
// dataplane keeps what it had of the part. Parts are named by the driver
// (an owner key, a load balancer key). Holds are not safe for concurrent
// use: a driver keeps them under its own lock.
//
// A round of work goes: StartRound (which held parts are due), the work
// (Hold what fails again), EndRound (the due parts not held again are
// released); Degraded reports what is held.

// heldPart is a part held back.
type heldPart struct {
	failures int
	retryAt  time.Time
	why      string // what the switch said (bounded)
}

// Holds are the parts held back, and when each is tried again.
type Holds struct {
	parts map[string]*heldPart
	// Now is the clock (time.Now; tests set another).
	Now func() time.Time
	// fresh are the parts held since the last TakeFresh, with why.
	fresh map[string]string
}

const (
	HoldFirst = time.Second     // the first retry's wait; doubled each time
	HoldMax   = 5 * time.Minute // at most (a full sync retries sooner)
)

// NewHolds returns empty Holds on the real clock.
func NewHolds() *Holds {
	return &Holds{parts: map[string]*heldPart{}, Now: time.Now, fresh: map[string]string{}}
}

// Hold holds part back (again) for why.
func (h *Holds) Hold(part, why string) {
	o := h.parts[part]
	if o == nil {
		o = &heldPart{}
		h.parts[part] = o
	}
	o.failures++
	o.retryAt = h.Now().Add(min(HoldMax, HoldFirst<<min(o.failures-1, 20)))
	o.why = why
	h.fresh[part] = why
}

// StartRound begins a round of work at now: it returns the held parts
// tried again in it (all of them when all is set: a full sync), and the
// filter of the parts the round works on (not held, or tried again and
// not held again during the round).
func (h *Holds) StartRound(now time.Time, all bool) (retrying []string, include func(string) bool) {
	for part, o := range h.parts {
		if all {
			o.retryAt = now
		}
		if !o.retryAt.After(now) {
			retrying = append(retrying, part)
		}
	}
	return retrying, func(part string) bool {
		o := h.parts[part]
		return o == nil || !o.retryAt.After(now)
	}
}

// EndRound releases the parts tried again in the round begun at now that
// were not held again.
func (h *Holds) EndRound(retrying []string, now time.Time) {
	for _, part := range retrying {
		if o := h.parts[part]; o != nil && !o.retryAt.After(now) {
			delete(h.parts, part)
		}
	}
}

// IsHeld reports whether part is held back.
func (h *Holds) IsHeld(part string) bool { return h.parts[part] != nil }

// Next is when the first held part is due (zero: none is held).
func (h *Holds) Next() time.Time {
	var t time.Time
	for _, o := range h.parts {
		if t.IsZero() || o.retryAt.Before(t) {
			t = o.retryAt
		}
	}
	return t
}

// HeldPart is a part held back and why.
type HeldPart struct{ Part, Why string }

// Held lists the held parts, sorted.
func (h *Holds) Held() []HeldPart {
	out := make([]HeldPart, 0, len(h.parts))
	for _, part := range slices.Sorted(maps.Keys(h.parts)) {
		out = append(out, HeldPart{Part: part, Why: h.parts[part].why})
	}
	return out
}

// TakeFresh returns the parts held since the last call, with why.
func (h *Holds) TakeFresh() map[string]string {
	if len(h.fresh) == 0 {
		return nil
	}
	f := h.fresh
	h.fresh = map[string]string{}
	return f
}
