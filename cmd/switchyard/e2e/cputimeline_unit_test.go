//go:build linux

package e2e

import (
	"maps"
	"testing"
	"time"
)

// A window's CPU is read from the last sample at or before its start to
// the first at or after its end (none: no figures); a process not read
// at either is left out.
func TestCPUTimelineWithin(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	c := &cpuTimeline{names: []string{"a", "b"},
		at:  []time.Time{t0, t0.Add(20 * ms), t0.Add(40 * ms), t0.Add(60 * ms)},
		cpu: [][]time.Duration{{0, -1}, {10 * ms, 5 * ms}, {30 * ms, 5 * ms}, {50 * ms, 25 * ms}}}
	for _, tc := range []struct {
		from, to time.Duration
		want     string
	}{
		{25 * ms, 35 * ms, "CPU over 20ms: a 20ms b 0s"},
		{20 * ms, 40 * ms, "CPU over 20ms: a 20ms b 0s"},
		{5 * ms, 45 * ms, "CPU over 60ms: a 50ms"},
		{50 * ms, 60 * ms, "CPU over 20ms: a 20ms b 20ms"},
		{50 * ms, 90 * ms, "no CPU samples"}, // past the last sample
		{-5 * ms, 10 * ms, "no CPU samples"}, // before the first
	} {
		if got := c.Within(t0.Add(tc.from), t0.Add(tc.to)); got != tc.want {
			t.Errorf("%v to %v: %q, want %q", tc.from, tc.to, got, tc.want)
		}
	}
}

// A reading at a time is the first sample at or after it, without the
// machine's busy time; none past the last sample or with a process unread.
func TestCPUTimelineSampleAt(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	c := &cpuTimeline{names: []string{"a", "b", machineName},
		at:  []time.Time{t0, t0.Add(20 * ms), t0.Add(40 * ms)},
		cpu: [][]time.Duration{{0, -1, 1 * ms}, {10 * ms, 5 * ms, 30 * ms}, {30 * ms, 6 * ms, 70 * ms}}}
	for _, tc := range []struct {
		at   time.Duration
		want map[string]time.Duration
	}{
		{15 * ms, map[string]time.Duration{"a": 10 * ms, "b": 5 * ms}},
		{20 * ms, map[string]time.Duration{"a": 10 * ms, "b": 5 * ms}},
		{21 * ms, map[string]time.Duration{"a": 30 * ms, "b": 6 * ms}},
		{-1 * ms, nil}, // b unread in the first sample
		{41 * ms, nil}, // past the last
	} {
		got, ok := c.SampleAt(t0.Add(tc.at))
		if ok != (tc.want != nil) || !maps.Equal(got, tc.want) {
			t.Errorf("at %v: %v %v, want %v", tc.at, got, ok, tc.want)
		}
	}
}
