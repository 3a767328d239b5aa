//go:build linux

package e2e

import (
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// cpuSplit is the CPU time, so far, of each process taking part in a
// step (switchyard, ovs-vswitchd, kube-apiserver): read before and after
// it, it says where the step's time went on this 2-core machine.
type cpuSplit map[string]func() (time.Duration, error)

// read reads every process's CPU time.
func (c cpuSplit) read(t testing.TB) map[string]time.Duration {
	t.Helper()
	out := map[string]time.Duration{}
	for name, f := range c {
		d, err := f()
		if err != nil {
			t.Fatalf("CPU time of %s: %v", name, err)
		}
		out[name] = d
	}
	return out
}

// reportCPU reports each process's CPU seconds between two readings as
// "<step>-cpu-<name>-s" (a process missing from from had used none).
func reportCPU(b *testing.B, step string, from, to map[string]time.Duration) {
	for name, d := range to {
		b.ReportMetric((d - from[name]).Seconds(), step+"-cpu-"+name+"-s")
	}
}

// pidCPU reads a process's CPU time by PID.
func pidCPU(pid int) func() (time.Duration, error) {
	return func() (time.Duration, error) { return ovstest.ProcessCPU(pid) }
}

// waitQuiet waits until a process used less than a tenth of a CPU over
// the last window, or bound passed; it returns how long it waited. The
// scale benchmark starts switchyard once kube-apiserver has digested the
// writes that made the cluster: on this 2-core machine its leftover work
// would otherwise be counted in switchyard's first sync (docs/scale.md).
func waitQuiet(t testing.TB, cpu func() (time.Duration, error), window, bound time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	for {
		before, err := cpu()
		if err != nil {
			t.Fatalf("CPU time: %v", err)
		}
		time.Sleep(window)
		after, err := cpu()
		if err != nil {
			t.Fatalf("CPU time: %v", err)
		}
		if after-before < window/10 || time.Since(began) >= bound {
			return time.Since(began)
		}
	}
}
