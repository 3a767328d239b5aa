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
	logger.Info("Periodic audit adopted", "began", began.Format(time.RFC3339Nano), "took", 3111*time.Millisecond, "drift", 0)
	logger.Info("Periodic audit adopted", "began", began.Add(10*time.Second).Format(time.RFC3339Nano), "took", 250*time.Microsecond, "drift", 2)
	log := filepath.Join(t.TempDir(), "switchyard.log")
	if err := os.WriteFile(log, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, parts, err := auditSpans(log)
	if err != nil {
		t.Fatal(err)
	}
	want := []span{
		{began, began.Add(3111 * time.Millisecond)},
		{began.Add(10 * time.Second), began.Add(10*time.Second + 250*time.Microsecond)},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(span{})); diff != "" {
		t.Errorf("auditSpans (-want +got):\n%s\nthe log:\n%s", diff, buf.String())
	}
	wantParts := []string{"took=3.111s drift=0", "took=250µs drift=2"}
	if diff := cmp.Diff(wantParts, parts); diff != "" {
		t.Errorf("auditSpans' parts (-want +got):\n%s", diff)
	}
	if n := overlapping(got, 0, began.Add(3*time.Second), began.Add(4*time.Second)); n != 1 {
		t.Errorf("a change from 3 s to 4 s after the first audit began overlaps %d audits, want 1", n)
	}
	if n := overlapping(got, 0, began.Add(4*time.Second), began.Add(9*time.Second)); n != 0 {
		t.Errorf("a change between the audits overlaps %d, want 0", n)
	}
}
