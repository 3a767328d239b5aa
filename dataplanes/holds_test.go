package dataplanes

import (
	"slices"
	"testing"
	"time"
)

// A held part waits HoldFirst, then twice as long after each new
// failure, up to HoldMax; a full round tries it at once; a round that
// tries it and does not hold it again releases it.
func TestHoldsBackOffAndRelease(t *testing.T) {
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	h := NewHolds()
	h.Now = func() time.Time { return now }
	h.Hold("a", "refused")
	if fresh := h.TakeFresh(); fresh["a"] != "refused" || h.TakeFresh() != nil {
		t.Fatalf("fresh %v, want a once", fresh)
	}
	var waits []time.Duration
	for range 12 {
		start := now
		retrying, include := h.StartRound(now, false)
		if len(retrying) != 0 || include("a") || !include("b") {
			t.Fatalf("at %v: retrying %v, a included %v; want a held, b included", now, retrying, include("a"))
		}
		now = h.Next()
		waits = append(waits, now.Sub(start))
		retrying, include = h.StartRound(now, false)
		if !slices.Equal(retrying, []string{"a"}) || !include("a") {
			t.Fatalf("at %v: retrying %v, want a", now, retrying)
		}
		h.Hold("a", "refused again") // fails again
		if include("a") {
			t.Fatal("a held again is still included")
		}
		h.EndRound(retrying, now)
	}
	if waits[0] != HoldFirst || waits[1] != 2*HoldFirst || waits[len(waits)-1] != HoldMax {
		t.Fatalf("waits %v, want %v doubling to %v", waits, HoldFirst, HoldMax)
	}
	retrying, _ := h.StartRound(now, true)
	if !slices.Equal(retrying, []string{"a"}) {
		t.Fatalf("a full round retries %v, want a", retrying)
	}
	h.EndRound(retrying, now)
	if h.IsHeld("a") || !h.Next().IsZero() || len(h.Held()) != 0 {
		t.Fatalf("a is still held after a round that did not hold it: %v", h.Held())
	}
}
