//go:build linux

package e2e

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// switchyard's periodic audits (ovs/audit.go) read the bridge and sync
// the host beside the changes, on the same two cores as ovs-vswitchd and
// kube-apiserver. The driver logs each at --v=2 when it is adopted, with
// when it began and how long its reads took; the scale benchmark reads
// those lines to say how many changes were followed while one ran, and
// the percentiles of the others, as it does for kube-apiserver's repairs.

// auditLine is the driver's line for an adopted audit.
var auditLine = regexp.MustCompile(`"Periodic audit adopted" began="([^"]+)" took="([^"]+)"`)

// auditPartTimes is how long each part of an audit took, from the rest
// of its line: its copy, its reads of the flows and the groups, the
// host's sync, one after the other.
var auditPartTimes = regexp.MustCompile(`copy="([^"]+)" flows="([^"]+)" groups="([^"]+)" host="([^"]+)"`)

// auditPartNames name the parts auditPartTimes matches, in order.
var auditPartNames = []string{"copy", "flows", "groups", "host"}

// auditHostOnly is the end of the line of an audit that synced the host
// only: the flow monitor reported nothing of the driver's flows
// (ovs/flowwatch.go). A line without the field read the bridge.
var auditHostOnly = regexp.MustCompile(` bridge=false\b`)

// audit is one of switchyard's audits: when it ran, when each of its
// parts did (none when its line does not say), and whether it read the
// bridge.
type audit struct {
	span
	parts  []span
	bridge bool
}

// auditSpans reads the audits a switchyard log holds so far.
func auditSpans(log string) ([]audit, error) {
	var out []audit
	err := eachLine(log, func(line []byte) error {
		m := auditLine.FindSubmatch(line)
		if m == nil {
			return nil
		}
		began, err := time.Parse(time.RFC3339Nano, string(m[1]))
		if err != nil {
			return fmt.Errorf("%s: an audit's start: %v", log, err)
		}
		took, err := time.ParseDuration(string(m[2]))
		if err != nil {
			return fmt.Errorf("%s: an audit's time: %v", log, err)
		}
		a := audit{span: span{began, began.Add(took)}, bridge: !auditHostOnly.Match(line)}
		if p := auditPartTimes.FindSubmatch(line); p != nil {
			at := began
			for _, d := range p[1:] {
				part, err := time.ParseDuration(string(d))
				if err != nil {
					return fmt.Errorf("%s: an audit's part: %v", log, err)
				}
				a.parts = append(a.parts, span{at, at.Add(part)})
				at = at.Add(part)
			}
		}
		out = append(out, a)
		return nil
	})
	return out, err
}

// partsDuring names the parts of the audits that overlap from..to.
func partsDuring(audits []audit, from, to time.Time) []string {
	var names []string
	for _, a := range audits {
		for i, p := range a.parts {
			if p.from.Before(to) && p.to.After(from) {
				names = append(names, auditPartNames[i])
			}
		}
	}
	return names
}

// reportAudits reports how many of the changes written at at were
// followed while one of switchyard's audits ran, the percentiles of those
// and of the others, of those outside both the audits and kube-apiserver's
// repairs, and the API server's part (write → the witness's event,
// delivered; -1 when unseen) inside and outside the audits: attribution,
// as reportRepairs, not a target's figure.
func (s *scaleRun) reportAudits(b *testing.B, at []time.Time, delivered, took []time.Duration) {
	audits, err := auditSpans(s.proxy.proc.LogPath())
	if err != nil {
		b.Fatal(err)
	}
	if len(audits) == 0 {
		b.Fatalf("no audit in %s over at least three sync periods: the driver's --v=2 line missing?", s.proxy.proc.LogPath())
	}
	logAudits(b, audits, at, delivered, took)
	spans := make([]span, len(audits))
	var bridgeSpans []span
	for i, a := range audits {
		spans[i] = a.span
		if a.bridge {
			bridgeSpans = append(bridgeSpans, a.span)
		}
	}
	repairs := s.repairLists(b)
	var in, inBridge, outside, outsideBoth, watchIn, watchOutside []time.Duration
	for i, d := range took {
		if overlapping(bridgeSpans, 0, at[i], at[i].Add(d)) > 0 {
			inBridge = append(inBridge, d)
		}
		if overlapping(spans, 0, at[i], at[i].Add(d)) > 0 {
			in = append(in, d)
			watchIn = appendWitnessed(watchIn, delivered[i])
			continue
		}
		outside = append(outside, d)
		watchOutside = appendWitnessed(watchOutside, delivered[i])
		if within(repairs, at[i], at[i].Add(d)) == 0 {
			outsideBoth = append(outsideBoth, d)
		}
	}
	b.ReportMetric(float64(len(audits)), "switchyard-audits")
	b.ReportMetric(float64(len(bridgeSpans)), "switchyard-audits-reading-bridge")
	b.ReportMetric(float64(len(in)), "write-to-traffic-in-audit")
	b.ReportMetric(float64(len(inBridge)), "write-to-traffic-in-bridge-audit")
	for _, p := range []struct {
		took []time.Duration
		name string
	}{
		{in, "write-to-traffic-in-audit"},
		{inBridge, "write-to-traffic-in-bridge-audit"},
		{outside, "write-to-traffic-outside-audit"},
		{outsideBoth, "write-to-traffic-outside-audit-and-repair"},
		{watchIn, "write-to-watch-in-audit"},
		{watchOutside, "write-to-watch-outside-audit"},
	} {
		if len(p.took) > 0 {
			reportPercentiles(b, p.took, p.name)
		}
	}
}

// appendWitnessed appends d when the witness saw the change (d ≥ 0).
func appendWitnessed(to []time.Duration, d time.Duration) []time.Duration {
	if d < 0 {
		return to
	}
	return append(to, d)
}

// logAudits logs each audit's parts, and the slowest changes with the
// API server's part of each and the audits' parts they overlapped.
func logAudits(b *testing.B, audits []audit, at []time.Time, delivered, took []time.Duration) {
	var lines []string
	for _, a := range audits {
		var parts []string
		for i, p := range a.parts {
			parts = append(parts, fmt.Sprintf("%s %v", auditPartNames[i], p.to.Sub(p.from).Round(time.Millisecond)))
		}
		reads := "host only"
		if a.bridge {
			reads = "bridge and host"
		}
		lines = append(lines, fmt.Sprintf("%v, %s (%s)", a.to.Sub(a.from).Round(time.Millisecond), reads, strings.Join(parts, ", ")))
	}
	b.Logf("switchyard's audits: %s", strings.Join(lines, "; "))
	order := make([]int, len(took))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return cmp.Compare(took[j], took[i]) })
	lines = lines[:0]
	for _, i := range order[:min(10, len(order))] {
		lines = append(lines, fmt.Sprintf("%v (watch %v) %v", took[i].Round(100*time.Microsecond),
			delivered[i].Round(100*time.Microsecond), partsDuring(audits, at[i], at[i].Add(took[i]))))
	}
	b.Logf("the slowest changes, with the audits' parts they overlapped: %s", strings.Join(lines, "; "))
}
