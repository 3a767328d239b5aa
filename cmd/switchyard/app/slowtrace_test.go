package app

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/core/runner"
)

// TestSlowChangeTracerWritesWithinItsBounds: a file for a sync whose
// slowest change took longer than the threshold, none for changes
// triggered before the tracer started or for a failed sync, none within
// the gap after one.
func TestSlowChangeTracerWritesWithinItsBounds(t *testing.T) {
	start := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	type sync struct {
		at      time.Duration   // after start
		changed []time.Duration // trigger times, after start
		failed  bool
	}
	ms := time.Millisecond
	cases := []struct {
		name  string
		syncs []sync
		want  []string
	}{
		{"fast changes", []sync{{at: time.Second, changed: []time.Duration{950 * ms, 990 * ms}}}, nil},
		{"one slow change among fast ones", []sync{{at: time.Second, changed: []time.Duration{990 * ms, 700 * ms}}},
			[]string{"slow-change-20261202T030001.000-300ms.trace"}},
		{"exactly the threshold is not slow", []sync{{at: time.Second, changed: []time.Duration{900 * ms}}}, nil},
		{"triggered before the start", []sync{{at: time.Second, changed: []time.Duration{-time.Hour}}}, nil},
		{"a failed sync", []sync{{at: time.Second, changed: []time.Duration{0}, failed: true}}, nil},
		{"a second within the gap, a third after it", []sync{
			{at: time.Second, changed: []time.Duration{0}},
			{at: 5 * time.Second, changed: []time.Duration{4 * time.Second}},
			{at: 11 * time.Second, changed: []time.Duration{10 * time.Second}},
		}, []string{"slow-change-20261202T030001.000-1000ms.trace", "slow-change-20261202T030011.000-1000ms.trace"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var now time.Time
			tr := &slowChangeTracer{dir: dir, over: 100 * ms, started: start, now: func() time.Time { return now },
				write: func(w io.Writer) (int64, error) { n, err := w.Write([]byte("window")); return int64(n), err }}
			for _, s := range tc.syncs {
				now = start.Add(s.at)
				r := runner.Result{}
				if s.failed {
					r.Err = errors.New("refused")
				}
				for _, c := range s.changed {
					r.ChangedAt = append(r.ChangedAt, start.Add(c))
				}
				tr.synced(r)
				waitIdle(t, tr)
			}
			if diff := cmp.Diff(tc.want, filesIn(t, dir)); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSlowChangeTracerStopsAtItsLimit: one slow sync every gap writes
// slowTraceFiles files and no more.
func TestSlowChangeTracerStopsAtItsLimit(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	now := start
	tr := &slowChangeTracer{dir: dir, over: time.Millisecond, started: start, now: func() time.Time { return now },
		write: func(io.Writer) (int64, error) { return 0, nil }}
	for i := range 2 * slowTraceFiles {
		now = start.Add(time.Duration(i+1) * slowTraceGap)
		tr.synced(runner.Result{ChangedAt: []time.Time{now.Add(-time.Second)}})
		waitIdle(t, tr)
	}
	if got := len(filesIn(t, dir)); got != slowTraceFiles {
		t.Errorf("files: %d, want %d", got, slowTraceFiles)
	}
}

// TestSlowChangeTracerWritesGoTrace: with Go's own flight recorder, the
// file is an execution trace (its header).
func TestSlowChangeTracerWritesGoTrace(t *testing.T) {
	dir := t.TempDir()
	tr, stop, err := startSlowChangeTracer(filepath.Join(dir, "traces"), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	time.Sleep(10 * time.Millisecond)
	tr.synced(runner.Result{ChangedAt: []time.Time{time.Now().Add(-5 * time.Millisecond)}})
	waitIdle(t, tr)
	files := filesIn(t, filepath.Join(dir, "traces"))
	if len(files) != 1 {
		t.Fatalf("files: %v, want one", files)
	}
	body, err := os.ReadFile(filepath.Join(dir, "traces", files[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(body, []byte("go 1.")) || !strings.Contains(string(body[:16]), "trace") {
		t.Errorf("not a Go execution trace: %q", body[:min(len(body), 16)])
	}
}

// TestStartSlowChangeTracerRefusesAFile: a directory that cannot be made
// is a clear error, before anything starts.
func TestStartSlowChangeTracerRefusesAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := startSlowChangeTracer(filepath.Join(file, "traces"), time.Millisecond); err == nil || !strings.Contains(err.Error(), "--trace-slow-changes") {
		t.Errorf("err = %v, want one naming --trace-slow-changes", err)
	}
}

// waitIdle waits until the tracer writes nothing.
func waitIdle(t *testing.T, tr *slowChangeTracer) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		tr.mu.Lock()
		busy := tr.busy
		tr.mu.Unlock()
		if !busy {
			return
		}
	}
	t.Fatal("still writing after 10 s")
}

// filesIn lists dir's file names, sorted.
func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestSlowChangeTracerLeavesNoPartOfAFailedWindow: a window that fails
// half-written leaves no file (nor a temporary one) behind.
func TestSlowChangeTracerLeavesNoPartOfAFailedWindow(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	now := start.Add(time.Second)
	tr := &slowChangeTracer{dir: dir, over: time.Millisecond, started: start, now: func() time.Time { return now },
		write: func(w io.Writer) (int64, error) {
			n, _ := w.Write([]byte("half a window"))
			return int64(n), errors.New("the recorder stopped")
		}}
	tr.synced(runner.Result{ChangedAt: []time.Time{start}})
	waitIdle(t, tr)
	if files := filesIn(t, dir); len(files) != 0 {
		t.Errorf("files after a failed window: %v, want none", files)
	}
}
