package testobj

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// ProcessRSS returns the resident set size of a process in bytes, read
// from /proc/<pid>/status (pid 0: this process); 0 where there is no
// /proc. Benchmarks report it next to the Go heap.
func ProcessRSS(pid int) uint64 {
	return ProcessStatusBytes(pid, "VmRSS:")
}

// ProcessPeakRSS returns the highest resident set size the process has
// had since it started (the kernel's VmHWM), in bytes; 0 where there is
// no /proc. Unlike samples, it cannot miss a short peak.
func ProcessPeakRSS(pid int) uint64 {
	return ProcessStatusBytes(pid, "VmHWM:")
}

// ProcessStatusBytes reads one "<field> <n> kB" line of
// /proc/<pid>/status (pid 0: this process), in bytes; 0 where there is
// no such line or no /proc.
func ProcessStatusBytes(pid int, field string) uint64 {
	path := "/proc/self/status"
	if pid > 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
