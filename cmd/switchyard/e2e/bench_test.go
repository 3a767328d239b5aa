//go:build linux

package e2e

import (
	"bytes"
	"context"
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

	"github.com/switchyard-proxy/switchyard/conformance/ovsharness"
	"github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
				processScenario(b, n)
			}
		})
	}
}

func processScenario(b *testing.B, n int) {
	c := testobj.Synthetic(n, 10)
	var buf bytes.Buffer
	objs := []runtime.Object{c.Node}
	for i := range c.Services {
		objs = append(objs, c.Services[i], c.Slices[i])
	}
	for _, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			b.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(y)
	}
	dir := b.TempDir()
	file := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	// A node of its own (the synthetic cluster's node-0), switchyard on it.
	cl := ovstest.NewCluster(b, false, ovstest.NodeSpec{Name: "node-0",
		IPs: []netip.Addr{netip.MustParseAddr("192.168.100.10")}, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/24")}})
	node := cl.Nodes[0]
	o := node.OVS
	began := time.Now()
	p := node.StartSwitchyard(b, "--file="+file, "--profiling")
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
	ready := time.Since(began)
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

// BenchmarkAPIServerToOVS: a real API server holding 1 000 synthetic
// Services (10 endpoints each), switchyard run against it and a real OVS;
// one EndpointSlice update at a time, timed from the write until a
// connection reaches the new endpoint. Run with -benchtime 1x.
func BenchmarkAPIServerToOVS(b *testing.B) {
	const n, changes = 1000, 100
	for b.Loop() {
		c := startCluster(b)
		ctx := context.Background()
		c.addNodes(b)
		syn := testobj.Synthetic(n, 10)
		for _, ns := range namespacesOf(syn) {
			c.namespace(b, ns)
		}
		for i := range syn.Services {
			// The API server allocates ClusterIPs and node ports itself.
			svc := syn.Services[i].DeepCopy()
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs, svc.Spec.HealthCheckNodePort = "", nil, 0
			for j := range svc.Spec.Ports {
				svc.Spec.Ports[j].NodePort = 0
			}
			if _, err := c.Admin.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
				b.Fatalf("service %d: %v", i, err)
			}
			if _, err := c.Admin.DiscoveryV1().EndpointSlices(syn.Slices[i].Namespace).Create(ctx, syn.Slices[i], metav1.CreateOptions{}); err != nil {
				b.Fatalf("slice %d: %v", i, err)
			}
		}
		ns := "bench"
		c.namespace(b, ns)
		s, err := c.Admin.CoreV1().Services(ns).Create(ctx, service(ns, "probe", v1.ServiceTypeClusterIP, 80, 8080, 0), metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		eps := c.Admin.DiscoveryV1().EndpointSlices(ns)
		if _, err := eps.Create(ctx, slice(ns, "probe-1", "probe", 8080, endpoint{"10.244.1.5", "node-1", false}), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		p := &proxy{}
		w := ovsharness.BuildWorld(b, ovsharness.WorldOptions{StartNode1: p.onNode1(b, c, adminToken, "--min-sync-period=10ms")})
		w.Timeout = 200 * time.Millisecond
		vip := netip.AddrPortFrom(netip.MustParseAddr(s.Spec.ClusterIP), 80)
		if err := waitFor(2*time.Minute, func() error {
			if !reaches(w, "c", vip, "p1:8080") {
				return fmt.Errorf("probe service not programmed")
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		pods := []struct{ ip, id string }{{"10.244.1.6", "p2:8080"}, {"10.244.1.5", "p1:8080"}}
		took := make([]time.Duration, 0, changes)
		for i := range changes {
			time.Sleep(300 * time.Millisecond)
			next := pods[i%2]
			t0 := time.Now()
			if _, err := eps.Update(ctx, slice(ns, "probe-1", "probe", 8080, endpoint{next.ip, "node-1", false}), metav1.UpdateOptions{}); err != nil {
				b.Fatal(err)
			}
			for !reaches(w, "c", vip, next.id) {
				if time.Since(t0) > followBound {
					b.Fatalf("change %d not followed within %v", i, followBound)
				}
				time.Sleep(5 * time.Millisecond)
			}
			took = append(took, time.Since(t0))
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "write-to-traffic-p50-ms")
		b.ReportMetric(float64(took[(len(took)-1)*99/100].Microseconds())/1000, "write-to-traffic-p99-ms")
	}
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
