//go:build linux

package e2e

import (
	"fmt"
	"regexp"
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

// auditSpans reads the audits a switchyard log holds so far.
func auditSpans(log string) ([]span, error) {
	var out []span
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
		out = append(out, span{began, began.Add(took)})
		return nil
	})
	return out, err
}

// reportAudits reports how many of the changes written at at were
// followed while one of switchyard's audits ran, and the percentiles of
// the others, and of those outside both the audits and kube-apiserver's
// repairs (attribution, as reportRepairs: not a target's figure).
func (s *scaleRun) reportAudits(b *testing.B, at []time.Time, took []time.Duration) {
	audits, err := auditSpans(s.proxy.proc.LogPath())
	if err != nil {
		b.Fatal(err)
	}
	if len(audits) == 0 {
		b.Fatalf("no audit in %s over at least three sync periods: the driver's --v=2 line missing?", s.proxy.proc.LogPath())
	}
	repairs := s.repairLists(b)
	var outside, outsideBoth []time.Duration
	for i, d := range took {
		if overlapping(audits, 0, at[i], at[i].Add(d)) > 0 {
			continue
		}
		outside = append(outside, d)
		if within(repairs, at[i], at[i].Add(d)) == 0 {
			outsideBoth = append(outsideBoth, d)
		}
	}
	b.ReportMetric(float64(len(audits)), "switchyard-audits")
	b.ReportMetric(float64(len(took)-len(outside)), "write-to-traffic-in-audit")
	if len(outside) > 0 {
		reportPercentiles(b, outside, "write-to-traffic-outside-audit")
	}
	if len(outsideBoth) > 0 {
		reportPercentiles(b, outsideBoth, "write-to-traffic-outside-audit-and-repair")
	}
}
