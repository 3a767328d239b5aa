package ovs

import (
	"maps"
	"slices"
	"time"
)

// A failure stays with the owner it is of. When the switch refuses a
// bundle, the owners (a service port, a pod, a peer, the static pipeline)
// whose messages it names are held back and the rest is committed in the
// same round; when it names none, the owners are split in halves, each
// committed on its own, until the refused ones are alone. A held owner's
// changes stay pending, and the bridge keeps what it had of the owner (an
// older version of a Service keeps working), until it is tried again
// after a backoff, or at the next full sync.

// heldOwner is an owner whose changes the switch refused.
type heldOwner struct {
	failures int
	retryAt  time.Time
	why      string // what the switch said (bounded)
}

// holds are the owners held back, and when each is tried again.
type holds struct {
	owners map[string]*heldOwner
	now    func() time.Time
	// fresh are the owners held since the last takeFresh, with why.
	fresh map[string]string
}

const (
	holdFirst = time.Second     // the first retry's wait; doubled each time
	holdMax   = 5 * time.Minute // at most (a full sync retries sooner)
)

func newHolds() *holds {
	return &holds{owners: map[string]*heldOwner{}, now: time.Now, fresh: map[string]string{}}
}

// hold holds owner back (again) for why.
func (h *holds) hold(owner, why string) {
	o := h.owners[owner]
	if o == nil {
		o = &heldOwner{}
		h.owners[owner] = o
	}
	o.failures++
	o.retryAt = h.now().Add(min(holdMax, holdFirst<<min(o.failures-1, 20)))
	o.why = why
	h.fresh[owner] = why
}

// startRound begins a commit round at now: it returns the held owners
// tried again in it (all of them when all is set: a full sync), and the
// filter of the owners the round commits (not held, or tried again and
// not held again during the round).
func (h *holds) startRound(now time.Time, all bool) (retrying []string, include func(string) bool) {
	for owner, o := range h.owners {
		if all {
			o.retryAt = now
		}
		if !o.retryAt.After(now) {
			retrying = append(retrying, owner)
		}
	}
	return retrying, func(owner string) bool {
		o := h.owners[owner]
		return o == nil || !o.retryAt.After(now)
	}
}

// endRound releases the owners tried again in the round begun at now
// that were not held again.
func (h *holds) endRound(retrying []string, now time.Time) {
	for _, owner := range retrying {
		if o := h.owners[owner]; o != nil && !o.retryAt.After(now) {
			delete(h.owners, owner)
		}
	}
}

// isHeld reports whether owner is held back.
func (h *holds) isHeld(owner string) bool { return h.owners[owner] != nil }

// next is when the first held owner is due (zero: none is held).
func (h *holds) next() time.Time {
	var t time.Time
	for _, o := range h.owners {
		if t.IsZero() || o.retryAt.Before(t) {
			t = o.retryAt
		}
	}
	return t
}

// held lists the held owners, sorted, with why.
func (h *holds) held() []heldReport {
	out := make([]heldReport, 0, len(h.owners))
	for _, owner := range slices.Sorted(maps.Keys(h.owners)) {
		out = append(out, heldReport{owner: owner, why: h.owners[owner].why})
	}
	return out
}

// takeFresh returns the owners held since the last call, with why.
func (h *holds) takeFresh() map[string]string {
	if len(h.fresh) == 0 {
		return nil
	}
	f := h.fresh
	h.fresh = map[string]string{}
	return f
}

// heldReport is a held owner and why.
type heldReport struct{ owner, why string }
