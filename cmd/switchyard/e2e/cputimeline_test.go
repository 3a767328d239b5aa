//go:build linux

package e2e

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cpuTimeline samples, every cpuTimelineEvery, the CPU time of the
// processes taking part in a benchmark and the machine's busy time, so
// that a slow change can be told apart: switchyard's own work, or the 2
// cores taken by another process (kube-apiserver, etcd, ovs-vswitchd,
// the benchmark's probes) while it was followed. /proc counts CPU time
// in 10 ms ticks: a window's figures are good to about that.
type cpuTimeline struct {
	names []string
	read  []func() (time.Duration, error)
	stop  chan struct{}
	done  chan struct{}

	mu  sync.Mutex
	at  []time.Time
	cpu [][]time.Duration // per sample, per name; -1: not read
}

const cpuTimelineEvery = 20 * time.Millisecond

// machineName is the machine's busy time (every process's, ours and
// others'), always sampled.
const machineName = "machine"

// startCPUTimeline starts sampling the processes of split.
func startCPUTimeline(split cpuSplit) *cpuTimeline {
	c := &cpuTimeline{stop: make(chan struct{}), done: make(chan struct{})}
	for _, name := range slices.Sorted(maps.Keys(split)) {
		c.names, c.read = append(c.names, name), append(c.read, split[name])
	}
	c.names, c.read = append(c.names, machineName), append(c.read, machineBusy)
	go c.run()
	return c
}

func (c *cpuTimeline) run() {
	defer close(c.done)
	t := time.NewTicker(cpuTimelineEvery)
	defer t.Stop()
	for {
		c.sample()
		select {
		case <-c.stop:
			c.sample() // the last: so a sample follows any time before Stop
			return
		case <-t.C:
		}
	}
}

func (c *cpuTimeline) sample() {
	row := make([]time.Duration, len(c.read))
	for i, f := range c.read {
		d, err := f()
		if err != nil {
			d = -1
		}
		row[i] = d
	}
	c.mu.Lock()
	c.at, c.cpu = append(c.at, time.Now()), append(c.cpu, row)
	c.mu.Unlock()
}

// Stop ends the sampling.
func (c *cpuTimeline) Stop() {
	close(c.stop)
	<-c.done
}

// Within says how much CPU each process used from the last sample at or
// before from to the first at or after to, and over how long ("no CPU
// samples" when the samples do not cover the window).
func (c *cpuTimeline) Within(from, to time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, at := slices.BinarySearchFunc(c.at, from, time.Time.Compare)
	if !at {
		i-- // the last sample before from
	}
	j, _ := slices.BinarySearchFunc(c.at, to, time.Time.Compare)
	if i < 0 || j >= len(c.at) || j <= i {
		return "no CPU samples"
	}
	parts := []string{fmt.Sprintf("CPU over %v:", c.at[j].Sub(c.at[i]).Round(time.Millisecond))}
	for k, name := range c.names {
		a, b := c.cpu[i][k], c.cpu[j][k]
		if a < 0 || b < 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %v", name, (b-a).Round(time.Millisecond)))
	}
	return strings.Join(parts, " ")
}

// SampleAt is each process's CPU time (the machine's left out) at the
// first sample at or after t, normally within cpuTimelineEvery of it
// (false: none, or a process unread in it). After Stop there is one for
// any t before it.
func (c *cpuTimeline) SampleAt(t time.Time) (map[string]time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, _ := slices.BinarySearchFunc(c.at, t, time.Time.Compare)
	if j >= len(c.at) {
		return nil, false
	}
	out := map[string]time.Duration{}
	for k, name := range c.names {
		if name == machineName {
			continue
		}
		if c.cpu[j][k] < 0 {
			return nil, false
		}
		out[name] = c.cpu[j][k]
	}
	return out, true
}

// machineBusy is the time the machine's CPUs were not idle, from
// /proc/stat (every CPU, in USER_HZ ticks: user, nice, system, irq,
// softirq, steal).
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: %q", line)
	}
	var busy uint64
	for k, s := range f[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, err
		}
		if k < 8 && k != 3 && k != 4 { // not idle, iowait, guest (in user already)
			busy += v
		}
	}
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(busy) * time.Second / ticks, nil
}
