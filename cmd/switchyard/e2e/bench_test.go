//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	"sigs.k8s.io/yaml"
)

// metric reads one sample of a metric from a /metrics body (0 if absent).
func metric(body, name string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(?:\{[^}]*\})? (\S+)`).FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// BenchmarkSwitchyardProcess runs the switchyard binary itself with a
// synthetic cluster file against a real OVS, and reports the time from
// process start to the first full sync done, and the process's RSS and Go
// heap after it. Run with -benchtime 1x.
func BenchmarkSwitchyardProcess(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("services=%d/endpoints=%d", n, n*10), func(b *testing.B) {
			for b.Loop() {
				processScenario(b, n, yaml.Marshal)
			}
		})
	}
}

// BenchmarkSwitchyardProcessJSON is BenchmarkSwitchyardProcess with the
// cluster file as JSON documents (what `kubectl get -o json` prints is
// one JSON List): the same objects, decoded without going through YAML.
func BenchmarkSwitchyardProcessJSON(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("services=%d/endpoints=%d", n, n*10), func(b *testing.B) {
			for b.Loop() {
				processScenario(b, n, func(o any) ([]byte, error) { return json.Marshal(o) })
			}
		})
	}
}

func processScenario(b *testing.B, n int, marshal func(any) ([]byte, error)) {
	data, err := testobj.Synthetic(n, 10).File(marshal)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	file := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		b.Fatal(err)
	}
	// A node of its own (the synthetic cluster's node-0), switchyard on it.
	cl := ovstest.NewCluster(b, false, ovstest.NodeSpec{Name: "node-0",
		IPs: []netip.Addr{netip.MustParseAddr("192.168.100.10")}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/24")}})
	node := cl.Nodes[0]
	o := node.OVS
	ovstest.SwitchyardBinary(b) // built before the clock starts
	began := time.Now()
	p := node.StartSwitchyard(b, "--file="+file, "--profiling", scaleNodePortRange)
	px := &proxy{proc: p}
	var body string
	if err := waitFor(5*time.Minute, func() error {
		if p.Exited() {
			return fmt.Errorf("switchyard exited")
		}
		var err error
		if body, err = px.metrics(); err != nil {
			return err
		}
		if metric(body, "kubeproxy_sync_proxy_rules_last_timestamp_seconds") == 0 {
			return fmt.Errorf("no sync yet")
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	// When the first sync ended, as the process stamped it (the poll above
	// only notices it within 100 ms).
	ready := time.Unix(0, int64(metric(body, "kubeproxy_sync_proxy_rules_last_timestamp_seconds")*1e9)).Sub(began)
	if os.Getenv("SWITCHYARD_BENCH_LOG") != "" {
		b.Logf("started %s, synced after %v; switchyard's log:\n%s", began.Format("15:04:05.000000"), ready, p.LogTail(40))
	}
	time.Sleep(2 * time.Second)
	body, _ = px.metrics()
	rss, heap := float64(testobj.ProcessRSS(p.PID()))/(1<<20), metric(body, "go_memstats_heap_alloc_bytes")/(1<<20)
	// The live heap: a GC first (pprof's heap endpoint runs one with gc=1).
	saveProfile(b, p, filepath.Join(dir, "heap.prof"))
	body, _ = px.metrics()
	if pd := os.Getenv("SWITCHYARD_BENCH_PROFILES"); pd != "" {
		saveProfile(b, p, filepath.Join(pd, fmt.Sprintf("heap-%d.prof", n)))
	}
	b.ReportMetric(ready.Seconds(), "start-to-synced-s")
	b.ReportMetric(rss, "rss-MiB")
	b.ReportMetric(heap, "heap-MiB")
	b.ReportMetric(metric(body, "go_memstats_heap_alloc_bytes")/(1<<20), "live-heap-MiB")
	b.ReportMetric(float64(strings.Count(o.Ofctl("dump-flows", "br-sy"), "cookie=0x5359")), "flows-in-ovs")
}

func namespacesOf(c testobj.Cluster) []string {
	var out []string
	for _, s := range c.Services {
		if !slices.Contains(out, s.Namespace) {
			out = append(out, s.Namespace)
		}
	}
	return out
}

// saveProfile stores a heap profile of the running proxy, after a GC (for
// looking into what misses a target: SWITCHYARD_BENCH_PROFILES=dir).
func saveProfile(b *testing.B, p *ovstest.Process, path string) {
	prof, err := p.Fetch(ovstest.MetricsPort, "/debug/pprof/heap?gc=1")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, prof, 0o644); err != nil {
		b.Fatal(err)
	}
}

// profileCPU starts a CPU profile of the proxy over the next d (it
// retries while the process has not opened its metrics port yet); wait
// stores it at path. For where a first sync's time goes
// (SWITCHYARD_BENCH_PROFILES=dir).
func profileCPU(p *ovstest.Process, d time.Duration, path string) (wait func(testing.TB)) {
	done := make(chan error, 1)
	go func() {
		q := fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds()))
		var prof []byte
		err := waitFor(10*time.Second, func() (err error) { prof, err = p.Fetch(ovstest.MetricsPort, q); return err })
		if err == nil {
			err = os.WriteFile(path, prof, 0o644)
		}
		done <- err
	}()
	return func(t testing.TB) {
		if err := <-done; err != nil {
			t.Fatalf("CPU profile of the first sync: %v", err)
		}
	}
}
