package app

import (
	"runtime"
	"testing"
)

// The collection after a full sync runs on one CPU, and GOMAXPROCS is
// what it was afterwards.
func TestOnOneCPURestores(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	restore := onOneCPU()
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("GOMAXPROCS %d while collecting, want 1", n)
	}
	restore()
	if n := runtime.GOMAXPROCS(0); n != prev {
		t.Errorf("GOMAXPROCS %d after, want %d as before", n, prev)
	}
}
