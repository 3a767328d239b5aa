//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The repair lists are the audit log's ResponseComplete events, from the
// request's arrival to the response's end; a list counts within a
// window it overlaps, or whose aftermath (repairAftermath) does.
func TestRepairAuditLists(t *testing.T) {
	dir := t.TempDir()
	a, args := newRepairAudit(t, dir)
	if want := "--audit-log-path=" + filepath.Join(dir, "repair-audit.log"); args[1] != want {
		t.Fatalf("flags %q, want %q second", args, want)
	}
	if got, err := a.lists(); err != nil || got != nil {
		t.Fatalf("no log yet: %v, %v", got, err)
	}
	log := `{"kind":"Event","stage":"ResponseStarted","verb":"list","requestReceivedTimestamp":"2026-11-29T08:28:17.100000Z","stageTimestamp":"2026-11-29T08:28:17.500000Z"}
{"kind":"Event","stage":"ResponseComplete","verb":"list","requestReceivedTimestamp":"2026-11-29T08:28:17.100000Z","stageTimestamp":"2026-11-29T08:28:17.600000Z"}
{"kind":"Event","stage":"ResponseComplete","verb":"list","requestReceivedTimestamp":"2026-11-29T08:31:18.000000Z","stageTimestamp":"2026-11-29T08:31:18.250000Z"}
`
	if err := os.WriteFile(a.log, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := a.lists()
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339Nano, "2026-11-29T"+s+"Z"); return v }
	want := []span{{at("08:28:17.1"), at("08:28:17.6")}, {at("08:31:18"), at("08:31:18.25")}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(span{})); diff != "" {
		t.Fatalf("lists (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		from, to string
		want     int
	}{
		{"08:28:16.0", "08:28:17.0", 0}, // before the first
		{"08:28:16.0", "08:28:17.2", 1}, // into it
		{"08:28:18.5", "08:28:18.6", 1}, // in its aftermath
		{"08:28:18.7", "08:31:17.9", 0}, // between
		{"08:28:17.0", "08:31:19.0", 2}, // over both
	} {
		if n := within(got, at(tc.from), at(tc.to)); n != tc.want {
			t.Errorf("%s to %s: %d lists, want %d", tc.from, tc.to, n, tc.want)
		}
	}
	if err := os.WriteFile(a.log, []byte("{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := a.lists(); err == nil {
		t.Error("a malformed log read without an error")
	}
}
