//go:build linux

package e2e

import (
	"fmt"
	"regexp"
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

// auditParts is the rest of the line: the drift and each part's time.
var auditParts = regexp.MustCompile(`drift=.*`)

// auditSpans reads the audits a switchyard log holds so far, and what
// their lines say of their parts.
func auditSpans(log string) (spans []span, parts []string, err error) {
	err = eachLine(log, func(line []byte) error {
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
		spans = append(spans, span{began, began.Add(took)})
		parts = append(parts, fmt.Sprintf("took=%v %s", took, auditParts.Find(line)))
		return nil
	})
	return spans, parts, err
}

// reportAudits reports how many of the changes written at at were
// followed while one of switchyard's audits ran, the percentiles of those
// and of the others, of those outside both the audits and kube-apiserver's
// repairs, and the API server's part (write → the witness's event,
// delivered; -1 when unseen) inside and outside the audits: attribution,
// as reportRepairs, not a target's figure.
func (s *scaleRun) reportAudits(b *testing.B, at []time.Time, delivered, took []time.Duration) {
	audits, parts, err := auditSpans(s.proxy.proc.LogPath())
	if err != nil {
		b.Fatal(err)
	}
	if len(audits) == 0 {
		b.Fatalf("no audit in %s over at least three sync periods: the driver's --v=2 line missing?", s.proxy.proc.LogPath())
	}
	b.Logf("switchyard's audits: %s", strings.Join(parts, "; "))
	repairs := s.repairLists(b)
	var in, outside, outsideBoth, watchIn, watchOutside []time.Duration
	for i, d := range took {
		if overlapping(audits, 0, at[i], at[i].Add(d)) > 0 {
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
	b.ReportMetric(float64(len(in)), "write-to-traffic-in-audit")
	for _, p := range []struct {
		took []time.Duration
		name string
	}{
		{in, "write-to-traffic-in-audit"},
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
