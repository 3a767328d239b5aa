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

// report reports each process's CPU seconds between from and now as
// "<step>-cpu-<name>-s".
func (c cpuSplit) report(b *testing.B, step string, from map[string]time.Duration) {
	for name, d := range c.read(b) {
		b.ReportMetric((d - from[name]).Seconds(), step+"-cpu-"+name+"-s")
	}
}

// pidCPU reads a process's CPU time by PID.
func pidCPU(pid int) func() (time.Duration, error) {
	return func() (time.Duration, error) { return ovstest.ProcessCPU(pid) }
}
