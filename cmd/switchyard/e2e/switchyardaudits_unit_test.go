//go:build linux

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/textlogger"
)

// The audits are read from klog's own rendering of the driver's line
// (ovs/audit.go), among other lines.
func TestAuditSpans(t *testing.T) {
	var buf bytes.Buffer
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf)))
	began := time.Date(2026, 11, 30, 0, 12, 31, 456789012, time.UTC)
	logger.Info("Full sync's parts", "model", 2*time.Second)
	logger.Info("Periodic audit adopted", "began", began.Format(time.RFC3339Nano), "took", 3111*time.Millisecond, "drift", 0,
		"copy", 11*time.Millisecond, "flows", 2*time.Second, "groups", time.Second, "host", 100*time.Millisecond)
	logger.Info("Periodic audit adopted", "began", began.Add(10*time.Second).Format(time.RFC3339Nano), "took", 250*time.Microsecond, "drift", 2)
	logger.Info("Periodic audit adopted", "began", began.Add(20*time.Second).Format(time.RFC3339Nano), "took", 3*time.Millisecond, "drift", 0,
		"copy", time.Millisecond, "flows", time.Duration(0), "groups", time.Duration(0), "host", 2*time.Millisecond, "bridge", false)
	log := filepath.Join(t.TempDir(), "switchyard.log")
	if err := os.WriteFile(log, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := auditSpans(log)
	if err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) time.Time { return began.Add(d) }
	ms := time.Millisecond
	want := []audit{
		{span{began, at(3111 * ms)}, []span{{began, at(11 * ms)}, {at(11 * ms), at(2011 * ms)}, {at(2011 * ms), at(3011 * ms)}, {at(3011 * ms), at(3111 * ms)}}, true},
		{span{at(10 * time.Second), at(10*time.Second + 250*time.Microsecond)}, nil, true},
		{span{at(20 * time.Second), at(20*time.Second + 3*ms)}, []span{{at(20 * time.Second), at(20*time.Second + ms)},
			{at(20*time.Second + ms), at(20*time.Second + ms)}, {at(20*time.Second + ms), at(20*time.Second + ms)}, {at(20*time.Second + ms), at(20*time.Second + 3*ms)}}, false},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(span{}, audit{})); diff != "" {
		t.Errorf("auditSpans (-want +got):\n%s\nthe log:\n%s", diff, buf.String())
	}
	spans := []span{got[0].span, got[1].span}
	if n := overlapping(spans, 0, at(3*time.Second), at(4*time.Second)); n != 1 {
		t.Errorf("a change from 3 s to 4 s after the first audit began overlaps %d audits, want 1", n)
	}
	if n := overlapping(spans, 0, at(4*time.Second), at(9*time.Second)); n != 0 {
		t.Errorf("a change between the audits overlaps %d, want 0", n)
	}
	if diff := cmp.Diff([]string{"groups", "host"}, partsDuring(got, at(3*time.Second), at(3020*ms))); diff != "" {
		t.Errorf("the parts a change from 3 s to 3.02 s overlaps (-want +got):\n%s", diff)
	}
	if parts := partsDuring(got, at(10*time.Second), at(11*time.Second)); parts != nil {
		t.Errorf("a change during an audit whose line has no parts overlaps %v, want none", parts)
	}
}

// The first sync's parts are read from klog's own rendering of the
// lines, the first of each.
func TestFirstSyncPhases(t *testing.T) {
	var buf bytes.Buffer
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf)))
	logger.Info("Starting switchyard")
	logger.Info("Read the initial state", "elapsed", 4321*time.Millisecond)
	logger.Info("Full sync's parts", "elapsed", 1234567*time.Microsecond, "model", time.Second)
	logger.Info("Full sync's parts", "elapsed", 9*time.Second)
	log := filepath.Join(t.TempDir(), "switchyard.log")
	if err := os.WriteFile(log, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	source, driver, err := firstSyncPhases(log)
	if err != nil || source != 4321*time.Millisecond || driver != 1234567*time.Microsecond {
		t.Errorf("firstSyncPhases: %v, %v, %v; want 4.321s, 1.234567s\n%s", source, driver, err, buf.String())
	}
	if err := os.WriteFile(log, []byte("no such lines\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := firstSyncPhases(log); err == nil {
		t.Error("a log without the lines: no error")
	}
}
