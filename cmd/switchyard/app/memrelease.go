package app

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// memoryReleaser collects the heap's garbage and hands the memory back
// to the OS, in the background, one collection at a time, on one CPU.
type memoryReleaser struct {
	running atomic.Bool
}

func (m *memoryReleaser) release() {
	if m.running.CompareAndSwap(false, true) {
		go func() {
			defer m.running.Store(false)
			restore := onOneCPU()
			defer restore()
			debug.FreeOSMemory()
		}()
	}
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
