//go:build linux

package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/conformance/ovsharness"
	"github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkAPIServerAtScale is switchyard as a user runs it (the binary,
// --kubeconfig, a real OVS) against a real kube-apiserver holding n
// synthetic Services with 10 endpoints each, written as a cluster holds
// them (selectors, endpoints' target references, slices owned by their
// Service, managed fields). It measures, per size:
//   - process start to the first full sync, and the flows it left in OVS;
//   - the process's RSS every second over at least three periodic full
//     resyncs (--sync-period=10s) and 1 000 EndpointSlice changes: the
//     highest sample is the figure;
//   - API write → a real connection reaching the new endpoint, over 300
//     changes with --min-sync-period=0 and 30 with the default 1 s: the
//     time from the write until the earliest connection that reached it
//     was started (firstReaching: one started every 2 ms);
//   - a restart: OVS's flow count sampled every 100 ms from the stop of
//     the old process until 1 s after the new one's first sync (the lowest
//     sample against the full set), and how many of the flows the new
//     process re-added (a flow's duration in OVS restarts when it is).
//
// Run with -benchtime 1x.
func BenchmarkAPIServerAtScale(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("services=%d/endpoints=%d", n, n*10), func(b *testing.B) {
			for b.Loop() {
				apiServerScenario(b, n)
			}
		})
	}
}

const (
	// scaleNodePortRange is the API server's node-port range here (the
	// default one holds 2 768: fewer than 10k synthetic Services need).
	scaleNodePortRange = "--nodeport-range=30000-49999"
	scaleSyncPeriod    = 10 * time.Second
	scaleChurn         = 1000
	scaleProbes        = 300
	scaleProbesSlow    = 30
)

func apiServerScenario(b *testing.B, n int) {
	// Node ports for 30% of the Services: wider than the default range.
	c := startClusterWith(b, clusterOptions{Args: []string{"--service-node-port-range=30000-49999"}})
	c.addNodes(b)
	cfg := c.restConfig(adminToken)
	cfg.QPS = -1 // the writer is the benchmark's setup, not what is measured
	bulk := kubernetes.NewForConfigOrDie(cfg)
	syn := testobj.Synthetic(n, 10)
	for _, ns := range namespacesOf(syn) {
		c.namespace(b, ns)
	}
	written := time.Now()
	populate(b, bulk, syn)
	b.Logf("%d Services and slices written in %v", n, time.Since(written).Round(time.Millisecond))

	ctx := context.Background()
	ns := "bench"
	vip, eps := webService(b, c, ns, "probe")

	p := &proxy{}
	ovstest.SwitchyardBinary(b) // built before the clock starts
	var began, synced time.Time
	args := []string{"--min-sync-period=0s", "--sync-period=" + scaleSyncPeriod.String(), "--profiling", scaleNodePortRange}
	profiles := os.Getenv("SWITCHYARD_BENCH_PROFILES")
	if profiles != "" {
		args = append(args, "--v=2") // every sync in the log, with its time
	}
	startFirst := p.onNode1(b, c, adminToken, args...)
	w := ovsharness.BuildWorld(b, ovsharness.WorldOptions{StartNode1: func(nd *ovstest.Node) *ovstest.Process {
		began = time.Now()
		proc := startFirst(nd)
		synced = waitFirstSync(b, proc)
		return proc
	}})
	w.Timeout = 200 * time.Millisecond
	o := w.Node1.OVS
	if err := waitFor(2*time.Minute, func() error {
		if !reaches(w, "c", vip, "p1:8080") {
			return fmt.Errorf("probe service not programmed")
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(synced.Sub(began).Seconds(), "start-to-synced-s")
	b.ReportMetric(float64(ourFlowCount(b, o)), "flows-in-ovs")

	// RSS over churn, probes and periodic resyncs.
	rss := sampleRSS(p.proc.PID(), time.Second)
	churn(b, bulk, syn, scaleChurn)
	pods := []struct{ ip, id string }{{"10.244.1.6", "p2:8080"}, {"10.244.1.5", "p1:8080"}}
	missed := 0 // probes answered by no endpoint while following
	var changedAt []time.Time
	follow := func(changes int) []time.Duration {
		took := make([]time.Duration, 0, changes)
		for i := range changes {
			time.Sleep(300 * time.Millisecond)
			next := pods[i%2]
			t0 := time.Now()
			if _, err := eps.Update(ctx, slice(ns, "probe-1", "probe", 8080, endpoint{next.ip, "node-1", false}), metav1.UpdateOptions{}); err != nil {
				b.Fatal(err)
			}
			d, unanswered, err := firstReaching(w, "c", vip, next.id, t0)
			if err != nil {
				b.Fatalf("change %d: %v", i, err)
			}
			missed += unanswered
			took = append(took, d)
			changedAt = append(changedAt, t0)
		}
		// The next step expects pods[0]'s endpoint (p2) when changes is odd.
		if changes%2 == 1 {
			pods[0], pods[1] = pods[1], pods[0]
		}
		return took
	}
	fast := follow(scaleProbes)
	for time.Since(synced) < 3*scaleSyncPeriod+5*time.Second {
		time.Sleep(time.Second)
	}
	samples := rss.stop()
	b.Logf("RSS samples, MiB, every second from the first sync on (churn, probes, resyncs every %v): %.0f", scaleSyncPeriod, samples)
	if profiles != "" {
		saveProfile(b, p.proc, filepath.Join(profiles, fmt.Sprintf("api-heap-%d.prof", n)))
		saveFollowed(b, p.proc, filepath.Join(profiles, fmt.Sprintf("api-follow-%d.txt", n)), changedAt, fast)
	}
	body, _ := p.metrics()
	reportPercentiles(b, fast, "write-to-traffic")
	b.ReportMetric(slices.Max(samples), "rss-max-MiB")
	b.ReportMetric(samples[len(samples)-1], "rss-last-MiB")
	b.ReportMetric(float64(len(samples)), "rss-samples")
	b.ReportMetric(float64(missed), "probes-unanswered")
	b.ReportMetric(metric(body, "go_memstats_heap_alloc_bytes")/(1<<20), "heap-MiB")

	// Restart under the same API server, with the default
	// --min-sync-period.
	full := ourFlowCount(b, o)
	flows := sampleFlows(o, 100*time.Millisecond)
	restarted := time.Now()
	p.proc.Stop()
	proc := p.onNode1(b, c, adminToken, "--sync-period="+scaleSyncPeriod.String(), scaleNodePortRange)(w.Node1)
	resynced := waitFirstSync(b, proc)
	time.Sleep(time.Second)
	counts := flows.stop()
	b.ReportMetric(resynced.Sub(restarted).Seconds(), "restart-to-synced-s")
	b.ReportMetric(float64(full)-slices.Min(counts), "restart-flows-missing-max")
	b.ReportMetric(float64(readded(b, o, time.Since(restarted))), "restart-flows-readded")
	b.ReportMetric(float64(len(counts)), "restart-flow-samples")
	reportPercentiles(b, follow(scaleProbesSlow), "write-to-traffic-default")
}

// waitFirstSync waits until the process has finished its first full sync.
func waitFirstSync(b *testing.B, proc *ovstest.Process) time.Time {
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if proc.Exited() {
			b.Fatal("switchyard exited")
		}
		if body, err := proc.Metrics(); err == nil && metric(body, "kubeproxy_sync_proxy_rules_last_timestamp_seconds") != 0 {
			return time.Now()
		}
	}
	b.Fatal("no first sync within 5 minutes")
	return time.Time{}
}

func reportPercentiles(b *testing.B, took []time.Duration, name string) {
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(took[len(took)/2]), name+"-p50-ms")
	b.ReportMetric(ms(took[(len(took)-1)*99/100]), name+"-p99-ms")
}

// populate writes the synthetic Services and their slices as a cluster
// has them, from 16 writers.
func populate(b *testing.B, client kubernetes.Interface, syn testobj.Cluster) {
	ctx := context.Background()
	err := parallel(16, len(syn.Services), func(i int) error {
		svc := syn.Services[i].DeepCopy()
		// The API server allocates ClusterIPs and node ports.
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs, svc.Spec.HealthCheckNodePort = "", nil, 0
		for j := range svc.Spec.Ports {
			svc.Spec.Ports[j].NodePort = 0
		}
		svc.Spec.Selector = map[string]string{"app": svc.Name}
		made, err := client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("service %d: %w", i, err)
		}
		sl := syn.Slices[i].DeepCopy()
		yes := true
		sl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: made.Name, UID: made.UID, Controller: &yes, BlockOwnerDeletion: &yes}}
		sl.Labels[discovery.LabelManagedBy] = "endpointslice-controller.k8s.io"
		for j := range sl.Endpoints {
			sl.Endpoints[j].TargetRef = &v1.ObjectReference{Kind: "Pod", Namespace: sl.Namespace,
				Name: fmt.Sprintf("%s-7d9f8c6b5-%05d", made.Name, j), UID: types.UID(fmt.Sprintf("0f1e2d3c-%04x-4b5a-8978-%012x", j, i))}
		}
		if _, err := client.DiscoveryV1().EndpointSlices(sl.Namespace).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("slice %d: %w", i, err)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// churn makes changes EndpointSlice changes, each one endpoint of a
// different Service turning not ready, from 8 writers.
func churn(b *testing.B, client kubernetes.Interface, syn testobj.Cluster, changes int) {
	ctx := context.Background()
	patch := []byte(`[{"op":"replace","path":"/endpoints/0/conditions/ready","value":false}]`)
	err := parallel(8, changes, func(i int) error {
		sl := syn.Slices[(i*7919)%len(syn.Slices)]
		_, err := client.DiscoveryV1().EndpointSlices(sl.Namespace).Patch(ctx, sl.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

// parallel calls f for 0..n-1 from workers goroutines; a worker stops at
// its first error, and the first error is returned.
func parallel(workers, n int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for wk := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := wk; i < n; i += workers {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

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

// saveFollowed writes each change's write time and how long traffic took
// to follow it, slowest first, then the process's log (--v=2: every sync,
// with its time): where a slow change's time went.
func saveFollowed(b *testing.B, proc *ovstest.Process, path string, at []time.Time, took []time.Duration) {
	order := make([]int, len(at))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return int(took[j] - took[i]) })
	var out strings.Builder
	for _, i := range order {
		fmt.Fprintf(&out, "change %d written %s followed in %v\n", i, at[i].Format("15:04:05.000000"), took[i])
	}
	out.WriteString("\n" + proc.LogTail(20000))
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		b.Error(err)
	}
}

// Following a change: connections overlap, so when the change took
// effect is known to a probe's spacing, not to a whole connection's time
// (~10 ms through the userspace datapath).
const (
	probeSpacing   = 2 * time.Millisecond
	probesInFlight = 16
)

// firstReaching starts a connection from `from` to dst every
// probeSpacing (at most probesInFlight at once) until one is answered by
// id, lets those under way finish, and returns how long after t0 the
// earliest connection answered by id was started: the change was in
// effect by then. unanswered counts connections answered by nobody (not
// the old endpoint either: worth knowing why).
func firstReaching(w *ovsharness.World, from string, dst netip.AddrPort, id string, t0 time.Time) (time.Duration, int, error) {
	type result struct {
		sent time.Duration
		a    conformance.Answer
	}
	results := make(chan result, probesInFlight)
	inFlight, unanswered, best := 0, 0, time.Duration(-1)
	var lastDetail string
	start := func() {
		inFlight++
		sent := time.Since(t0)
		go func() { results <- result{sent, probe(w, from, dst)} }()
	}
	tick := time.NewTicker(probeSpacing)
	defer tick.Stop()
	start()
	for inFlight > 0 {
		select {
		case <-tick.C:
			if best < 0 && inFlight < probesInFlight && time.Since(t0) < followBound {
				start()
			}
		case r := <-results:
			inFlight--
			switch {
			case r.a.Outcome == conformance.Answered && r.a.Identity == id:
				if best < 0 || r.sent < best {
					best = r.sent
				}
			case r.a.Outcome != conformance.Answered:
				unanswered++
				lastDetail = fmt.Sprintf("%s (%s)", r.a.Outcome, r.a.Detail)
			}
			if inFlight == 0 && best < 0 && time.Since(t0) < followBound {
				start()
			}
		}
	}
	if best < 0 {
		return 0, unanswered, fmt.Errorf("not followed within %v (last unanswered: %s)", followBound, lastDetail)
	}
	return best, unanswered, nil
}
