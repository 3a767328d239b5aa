package app

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// The collection after the first sync runs on one CPU, and GOMAXPROCS is
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

func TestSoftLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name string
		in   memorySample
		want int64
	}{
		{"a quarter of the live heap as room", memorySample{liveHeap: 160 * mib, besidesHeap: 20 * mib}, 220 * mib},
		{"a small heap gets the least room", memorySample{liveHeap: 20 * mib, besidesHeap: 8 * mib}, 36 * mib},
		{"at 32 MiB live the two meet", memorySample{liveHeap: 32 * mib, besidesHeap: 0}, 40 * mib},
	} {
		if got := softLimit(c.in); got != c.want {
			t.Errorf("%s: softLimit(%+v) = %d MiB, want %d MiB", c.name, c.in, got/mib, c.want/mib)
		}
	}
}

// The limit follows the live heap from one collection to the next, and
// stop puts back the one before.
func TestMemoryPolicyFollowsTheLiveHeap(t *testing.T) {
	const ceiling = 1 << 40
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(ceiling))
	m := &memoryPolicy{}
	m.start(ceiling)
	defer m.stop()
	before := debug.SetMemoryLimit(-1)
	if before == ceiling || before < int64(readMemory().liveHeap) {
		t.Fatalf("limit %d after start, want one above the live heap %d", before, readMemory().liveHeap)
	}
	held := make([]byte, 64<<20)
	for i := range held {
		held[i] = 1
	}
	deadline := time.Now().Add(10 * time.Second)
	for debug.SetMemoryLimit(-1) < before+64<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("limit %d after collections with 64 MiB more live, want at least %d", debug.SetMemoryLimit(-1), before+64<<20)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(held)
	m.stop()
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	if got := debug.SetMemoryLimit(-1); got != ceiling {
		t.Errorf("limit %d after stop and a collection, want the one before, %d", got, int64(ceiling))
	}
}

// GOMEMLIMIT (the limit found at the start) stays an upper bound.
func TestMemoryPolicyKeepsUnderTheCeiling(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	ceiling := int64(readMemory().liveHeap) + softLimitMinHeadroom/2
	m := &memoryPolicy{}
	m.start(ceiling)
	got := debug.SetMemoryLimit(-1)
	m.stop()
	if got != ceiling {
		t.Errorf("limit %d, want the ceiling %d (the followed one would be above it)", got, ceiling)
	}
	if got := debug.SetMemoryLimit(-1); got != ceiling {
		t.Errorf("limit %d after stop, want the ceiling %d back", got, ceiling)
	}
}
