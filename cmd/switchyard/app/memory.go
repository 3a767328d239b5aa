package app

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// memoryPolicy keeps RSS near the live heap once the first full sync is
// done, without forcing a collection onto the change path
// (docs/scale.md, "A soft memory limit that follows the live heap"):
//
//   - After the first full sync, one forced collection hands the start's
//     garbage (the initial lists, decoded; the first bundle) back to the
//     OS, in the background, on one CPU.
//   - From then on a soft memory limit (debug.SetMemoryLimit) follows the
//     live heap: after every collection it is set to the memory the
//     runtime holds besides its heap, plus the live heap and a quarter of it
//     again (at least softLimitMinHeadroom). The collector runs as the
//     heap nears it and the runtime hands pages back to the OS to stay
//     under it, so a periodic audit's garbage neither piles up nor needs
//     a forced collection.
//
// GOGC in the environment turns the policy off: the operator chose how
// the collector paces itself. GOMEMLIMIT stays an upper bound: the limit
// followed is never above it; without one, the container's memory limit
// gives the bound from the start (limitToContainer). stop puts back the
// limit found at the start.
type memoryPolicy struct {
	once sync.Once
	mu   sync.Mutex
	// following is set while the limit is in force, stopped by stop.
	following, stopped bool
	// ceiling is the limit before the policy (GOMEMLIMIT's, the
	// container's, or none).
	ceiling int64
	// original is the limit found before limitToContainer set one;
	// restoreOriginal says it did.
	original        int64
	restoreOriginal bool
}

// limitToContainer sets the runtime's limit from the container's memory
// limit, when there is one and GOMEMLIMIT is unset
// (containerMemoryCeiling), before the source reads the initial state.
func (m *memoryPolicy) limitToContainer(getenv func(string) string, cgroupRoot, procSelfCgroup string) (int64, bool) {
	limit, ok := containerMemoryCeiling(getenv, cgroupRoot, procSelfCgroup)
	if !ok {
		return 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.original, m.restoreOriginal = debug.SetMemoryLimit(limit), true
	return limit, true
}

// softLimitMinHeadroom is the least room for garbage above the live heap,
// so a small heap is not collected every few allocations.
const softLimitMinHeadroom = 8 << 20

// firstSynced is called after every successful full sync; the first call
// releases the start's garbage and starts the limit. It never blocks.
func (m *memoryPolicy) firstSynced() {
	m.once.Do(func() {
		go func() {
			restore := onOneCPU()
			debug.FreeOSMemory()
			restore()
			if os.Getenv("GOGC") == "" {
				m.start(debug.SetMemoryLimit(-1))
			}
		}()
	})
}

// start follows the live heap from now on, never above ceiling.
func (m *memoryPolicy) start(ceiling int64) {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return
	}
	m.following, m.ceiling = true, ceiling
	m.mu.Unlock()
	m.follow()
}

// stop ends the limit (when the command's run ends; tests run it in one
// process many times) and puts back the one found at the start.
func (m *memoryPolicy) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.stopped:
	case m.restoreOriginal:
		debug.SetMemoryLimit(m.original)
	case m.following:
		debug.SetMemoryLimit(m.ceiling)
	}
	m.stopped = true
}

// follow sets the limit from the last collection's live heap and arms
// itself to run again after the next collection.
func (m *memoryPolicy) follow() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	debug.SetMemoryLimit(min(softLimit(readMemory()), m.ceiling))
	runtime.AddCleanup(new(gcSentinel), func(m *memoryPolicy) { m.follow() }, m)
}

// gcSentinel is garbage from birth: its cleanup runs after the next
// collection. Not a tiny allocation (those may share a block and outlive
// a collection).
type gcSentinel struct{ _ [64]byte }

// memorySample is what the limit is made from, in bytes.
type memorySample struct {
	// liveHeap is what the last collection found live.
	liveHeap uint64
	// besidesHeap is the runtime's memory that is not the heap's
	// objects or free pages: stacks, the collector's and the
	// allocator's metadata, the unused ends of the heap's spans.
	besidesHeap uint64
}

// softLimit is the limit for a sample: what the runtime holds besides
// the heap, the live heap, and room for garbage of a quarter of the live heap (at
// least softLimitMinHeadroom), as GOGC=25 would give the heap alone.
func softLimit(s memorySample) int64 {
	headroom := max(s.liveHeap/4, softLimitMinHeadroom)
	return int64(s.besidesHeap + s.liveHeap + headroom)
}

var memoryMetrics = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/objects:bytes",
}

// readMemory reads a memorySample from the runtime.
func readMemory() memorySample {
	s := make([]metrics.Sample, len(memoryMetrics))
	for i, name := range memoryMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	v := func(i int) uint64 { return s[i].Value.Uint64() }
	heap := v(2) + v(3) + v(4)
	return memorySample{liveHeap: v(0), besidesHeap: v(1) - min(heap, v(1))}
}

// onOneCPU sets GOMAXPROCS to 1 until restore is called, which sets it
// back: to what the GOMAXPROCS environment variable said, or else to the
// runtime's default (which follows the CPU quota again). A forced
// collection's idle workers would otherwise take every CPU the process
// may use while it marks the heap (~125 ms, ~250 ms of CPU at 30k
// Services), CPUs that ovs-vswitchd needs for a change arriving meanwhile
// (docs/scale.md). Changing GOMAXPROCS stops the world for a moment.
func onOneCPU() (restore func()) {
	prev := runtime.GOMAXPROCS(0)
	if prev <= 1 {
		return func() {}
	}
	runtime.GOMAXPROCS(1)
	return func() {
		if os.Getenv("GOMAXPROCS") != "" {
			runtime.GOMAXPROCS(prev)
			return
		}
		runtime.SetDefaultGOMAXPROCS()
	}
}
