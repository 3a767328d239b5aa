package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/trace"
	"sync"
	"time"

	"github.com/switchyard-proxy/switchyard/core/runner"
	"github.com/switchyard-proxy/switchyard/internal/atomicfile"
	"k8s.io/klog/v2"
)

// slowChangeTracer keeps the last seconds of Go's execution trace in
// memory (runtime/trace's flight recorder) and, when a sync programmed a
// change more than over after the change's trigger time (what
// network_programming_duration_seconds measures), writes that window to
// a file in dir: what every goroutine of the process did while the
// change waited, for `go tool trace`. Off unless --trace-slow-changes
// names a directory (README's flags).
//
// Bounded: one file written at a time, off the sync's goroutine; at least
// slowTraceGap between two; at most slowTraceFiles a process. Changes
// triggered before the tracer started are not counted (the window cannot
// hold their wait: the first sync's, after a restart).
type slowChangeTracer struct {
	dir     string
	over    time.Duration
	started time.Time
	now     func() time.Time
	write   func(io.Writer) (int64, error) // the recorder's window

	mu      sync.Mutex
	busy    bool      // a file is being written
	last    time.Time // when the last file was begun
	written int       // files begun
}

const (
	// slowTraceFiles bounds the files one process writes.
	slowTraceFiles = 16
	// slowTraceGap is the least time between two files: one slow
	// stretch (an API server's repair, a burst) makes one.
	slowTraceGap = 10 * time.Second
	// slowTraceWindow is the least time the window holds, and
	// slowTraceWindowBytes the most memory it may take (which wins).
	slowTraceWindow      = 2 * time.Second
	slowTraceWindowBytes = 32 << 20
)

// startSlowChangeTracer starts Go's flight recorder for the process; stop
// ends it. Only one execution tracer runs in a process.
func startSlowChangeTracer(dir string, over time.Duration) (t *slowChangeTracer, stop func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("--trace-slow-changes: %w", err)
	}
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: max(slowTraceWindow, 4*over), MaxBytes: slowTraceWindowBytes})
	if err := fr.Start(); err != nil {
		return nil, nil, fmt.Errorf("--trace-slow-changes: starting Go's flight recorder: %w", err)
	}
	return &slowChangeTracer{dir: dir, over: over, started: time.Now(), now: time.Now, write: fr.WriteTo}, fr.Stop, nil
}

// synced hears every sync (coremetrics.Observer.OnSync): the slowest
// change it programmed decides whether the window is written.
func (t *slowChangeTracer) synced(r runner.Result) {
	if r.Err != nil {
		return
	}
	now := t.now()
	var slowest time.Duration
	for _, at := range r.ChangedAt {
		if !at.Before(t.started) {
			slowest = max(slowest, now.Sub(at))
		}
	}
	if slowest <= t.over {
		return
	}
	trace.Log(context.Background(), "slow change", slowest.String()) // where the window ends
	if t.claim(now) {
		go t.save(now, slowest)
	}
}

// claim reserves the next file, if the bounds allow one now.
func (t *slowChangeTracer) claim(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.busy || t.written >= slowTraceFiles || (t.written > 0 && now.Sub(t.last) < slowTraceGap) {
		return false
	}
	t.busy, t.last = true, now
	t.written++
	return true
}

// save writes the window to a file named for when and how slow; a
// failure is logged and costs that file only.
func (t *slowChangeTracer) save(at time.Time, slowest time.Duration) {
	defer func() {
		t.mu.Lock()
		t.busy = false
		t.mu.Unlock()
	}()
	path := filepath.Join(t.dir, fmt.Sprintf("slow-change-%s-%dms.trace", at.UTC().Format("20060102T150405.000"), slowest.Milliseconds()))
	err := writeFile(path, t.write)
	if err != nil {
		klog.ErrorS(err, "Could not write the execution trace of a slow change", "path", path)
		return
	}
	klog.InfoS("A change took long to program: wrote the last seconds' execution trace", "path", path, "took", slowest)
}

// writeFile writes what write gives to path whole or not at all
// (atomicfile: a reader of the directory never sees half a window, and a
// failed write leaves no file).
func writeFile(path string, write func(io.Writer) (int64, error)) error {
	pr, pw := io.Pipe()
	go func() {
		_, err := write(pw)
		pw.CloseWithError(err)
	}()
	err := atomicfile.Write(path, pr, 0o600)
	pr.CloseWithError(err) // a write still under way ends (atomicfile stopped reading)
	return err
}
