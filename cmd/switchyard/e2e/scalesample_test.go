//go:build linux

package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// sampler calls a function every period until stopped.
type sampler struct {
	mu   sync.Mutex
	vals []float64
	quit chan struct{}
	done chan struct{}
}

func sample(period time.Duration, f func() (float64, bool)) *sampler {
	s := &sampler{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			if v, ok := f(); ok {
				s.mu.Lock()
				s.vals = append(s.vals, v)
				s.mu.Unlock()
			}
			select {
			case <-s.quit:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *sampler) stop() []float64 {
	close(s.quit)
	<-s.done
	return s.vals
}

func sampleRSS(pid int, period time.Duration) *sampler {
	return sample(period, func() (float64, bool) {
		rss := testobj.ProcessRSS(pid)
		return float64(rss) / (1 << 20), rss > 0
	})
}

func sampleFlows(o *ovstest.OVS, period time.Duration) *sampler {
	return sample(period, func() (float64, bool) {
		n, err := countOurFlows(o)
		return float64(n), err == nil
	})
}

var flowCount = regexp.MustCompile(`flow_count=(\d+)`)

// countOurFlows counts the flows carrying switchyard's cookie tag in OVS.
func countOurFlows(o *ovstest.OVS) (int, error) {
	out, err := o.OfctlErr("dump-aggregate", "br-sy", "cookie=0x5359000000000000/0xffff000000000000")
	if err != nil {
		return 0, err
	}
	m := flowCount.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("dump-aggregate: no flow_count in %q", out)
	}
	return strconv.Atoi(m[1])
}

func ourFlowCount(b *testing.B, o *ovstest.OVS) int {
	n, err := countOurFlows(o)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

var flowDuration = regexp.MustCompile(`cookie=(0x[0-9a-f]+), duration=([0-9.]+)s`)

// readded counts switchyard's pipeline flows (not learned ones) younger
// than age: added or re-added since.
func readded(b *testing.B, o *ovstest.OVS, age time.Duration) int {
	n := 0
	for _, m := range flowDuration.FindAllStringSubmatch(o.Ofctl("dump-flows", "br-sy", "cookie=0x5359100000000000/0xfffff00000000000"), -1) {
		d, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			b.Fatal(err)
		}
		if time.Duration(d*float64(time.Second)) < age {
			n++
		}
	}
	return n
}
