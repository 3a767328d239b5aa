//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// kubeProxy is upstream kube-proxy v1.36 in nftables mode, run beside
// switchyard against the same API server for the same node (node-1), in
// a network namespace of its own: an interface (one end of a veth pair
// whose other end is in the namespace too) holds the probe
// Service's two pod addresses (a listener answering as each pod on
// 8080) and the default route, so a connection from the namespace to
// the ClusterIP goes through kube-proxy's rules (output DNAT) to the
// endpoint kube-proxy chose, as a node's own connections do.
type kubeProxy struct {
	ns    string
	proc  *process
	began time.Time
}

const kubeProxyMetricsPort = 10249

// kubeProxyBinary builds upstream kube-proxy once (hack/ensure-node.sh
// kube-proxy), or takes SWITCHYARD_KUBE_PROXY_DIR.
func kubeProxyBinary(t testing.TB) string {
	return filepath.Join(cached(t, "SWITCHYARD_KUBE_PROXY_DIR", "hack/ensure-node.sh", "kube-proxy"), "kube-proxy")
}

// startKubeProxy starts kube-proxy with a configuration file (v1.36 takes
// its sync periods from one only): nftables mode for node-1, the given
// nftables sync periods, nothing written outside its namespace
// (conntrack's table size and timeouts left alone) and its OOM score not
// lowered (root here may not).
func startKubeProxy(b *testing.B, c *cluster, nd *ovstest.Node, syncPeriod, minSyncPeriod time.Duration) *kubeProxy {
	bin := kubeProxyBinary(b)
	ns := nd.Namespace(b, "kp")
	for _, cmd := range [][]string{
		{"ip", "link", "add", "kp0", "type", "veth", "peer", "name", "kp1"}, // no dummy module here
		{"ip", "link", "set", "kp0", "up"},
		{"ip", "link", "set", "kp1", "up"},
		{"ip", "addr", "add", probePods[0].ip + "/32", "dev", "kp0"},
		{"ip", "addr", "add", probePods[1].ip + "/32", "dev", "kp0"},
		{"ip", "route", "add", "default", "dev", "kp0"},
	} {
		if out, err := nd.ExecIn(ns, cmd...); err != nil {
			b.Fatalf("%v: %v: %s", cmd, err, out)
		}
	}
	for _, p := range probePods {
		ovstest.ServeTCPAt(b, ns, p.ip, 8080, p.id)
	}
	fwd := newForwarder(b, ns, strings.TrimPrefix(c.URL, "https://"))
	via := &cluster{URL: "https://" + fwd.addr, CAFile: c.CAFile}
	dir := b.TempDir()
	config := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: node-1
mode: nftables
metricsBindAddress: 127.0.0.1:%d
healthzBindAddress: 127.0.0.1:10256
oomScoreAdj: 0
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
nftables:
  syncPeriod: %s
  minSyncPeriod: %s
`, via.kubeconfig(b, adminToken), kubeProxyMetricsPort, syncPeriod, minSyncPeriod)
	path := filepath.Join(dir, "kube-proxy.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	return &kubeProxy{ns: ns, proc: startIn(b, dir, "kube-proxy", ns, bin, "--config="+path), began: began}
}

// metrics reads kube-proxy's /metrics.
func (k *kubeProxy) metrics() (string, error) {
	c := http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true, DialContext: dialerIn(k.ns)}}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", kubeProxyMetricsPort))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// prober connects from kube-proxy's namespace to dst; traffic may take
// bound to follow a change.
func (k *kubeProxy) prober(dst netip.AddrPort, bound time.Duration) prober {
	return prober{name: "kube-proxy", bound: bound, probe: func() conformance.Answer {
		id, err := ovstest.ProbeTCP(k.ns, netip.Addr{}, dst, 200*time.Millisecond)
		switch {
		case err == nil:
			return conformance.Answer{Outcome: conformance.Answered, Identity: id}
		case errors.Is(err, ovstest.ErrTimeout):
			return conformance.Answer{Outcome: conformance.Dropped, Detail: err.Error()}
		case errors.Is(err, ovstest.ErrRefused):
			return conformance.Answer{Outcome: conformance.Rejected, Detail: err.Error()}
		}
		return conformance.Answer{Outcome: conformance.Unreachable, Detail: err.Error()}
	}}
}

// besideKubeProxy runs kube-proxy beside switchyard on the same API
// server and node, and reports, for both and as the ratio switchyard /
// kube-proxy (lower is better for switchyard, as every unit here is
// worse when higher): process start to the first sync (each while the
// other idles); how long after the first write a burst of scaleChurn
// slice changes was all programmed; RSS's highest sample while both follow
// the same changes (the burst, then besideMoves(n) moves of the probe
// Service's endpoint); write → a real connection reaching the new
// endpoint through each one's dataplane, probed at once after each
// write; and the bucket holding the 50th and 99th percentile of
// kubeproxy_network_programming_duration_seconds over those changes
// (kube-proxy's finest bucket is 250 ms, so its figure is a bound).
func besideKubeProxy(b *testing.B, s *scaleRun, switchyardFirstSync time.Duration) {
	// 1 ms: kube-proxy's configuration takes 0 as unset (1 s).
	kp := startKubeProxy(b, s.cluster, s.world.Node1, scaleSyncPeriod, time.Millisecond)
	bound := scaleBound(s.n)
	synced := waitSynced(b, "kube-proxy", lastSync+`{ip_family="IPv4"}`, bound, kp.proc.exited, kp.metrics)
	kpFirstSync := synced.Sub(kp.began)
	// A move waits for at most two of kube-proxy's full syncs (~14 s each
	// at 10k here): a minute a 10k Services.
	viaKubeProxy := kp.prober(s.vip, max(time.Minute, time.Duration(s.n/10000)*time.Minute))
	if err := waitFor(2*time.Minute, func() error {
		if a := viaKubeProxy.probe(); a.Outcome != conformance.Answered || a.Identity != s.changes.current() {
			return fmt.Errorf("kube-proxy: probe Service answered %+v, want %s", a, s.changes.current())
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(kpFirstSync.Seconds(), "kube-proxy-start-to-synced-s")
	b.ReportMetric(switchyardFirstSync.Seconds()/kpFirstSync.Seconds(), "sy/kp-start-to-synced")

	scrapes := map[string]func() (string, error){"switchyard": s.proxy.metrics, "kube-proxy": kp.metrics}
	before := map[string][2]histogram{}
	for name, scrape := range scrapes {
		before[name] = [2]histogram{scrapeHistogram(b, scrape, netProgrammingMetric), scrapeHistogram(b, scrape, syncDurationMetric)}
	}
	rssSY, rssKP := sampleRSS(s.proxy.proc.PID(), time.Second), sampleRSS(kp.proc.cmd.Process.Pid, time.Second)
	churned := time.Now()
	churn(b, s.bulk, s.syn, scaleChurn, true)
	burst := map[string]chan time.Duration{}
	for name, scrape := range scrapes { // both at once: each its own time
		burst[name] = make(chan time.Duration, 1)
		go func() { burst[name] <- programmed(name, scrape, before[name][0].count+scaleChurn, churned, bound) }()
	}
	for name, done := range burst {
		d := <-done
		if d < 0 {
			b.Fatalf("%s: the burst of %d changes not programmed within %v", name, scaleChurn, bound)
		}
		b.ReportMetric(d.Seconds(), "beside-"+name+"-burst-programmed-s")
	}
	took := s.changes.follow(b, besideMoves(s.n), s.viaSwitchyard, viaKubeProxy)
	maxSY, maxKP := slices.Max(rssSY.stop()), slices.Max(rssKP.stop())
	after := map[string][2]histogram{}
	for name, scrape := range scrapes {
		after[name] = [2]histogram{scrapeHistogram(b, scrape, netProgrammingMetric), scrapeHistogram(b, scrape, syncDurationMetric)}
	}
	kp.proc.stop()

	reportBeside(b, took, s.changes.missed, before, after)
	b.ReportMetric(maxSY, "beside-switchyard-rss-max-MiB")
	b.ReportMetric(maxKP, "beside-kube-proxy-rss-max-MiB")
	b.ReportMetric(maxSY/maxKP, "sy/kp-rss-max")
}

// reportBeside reports each proxy's write → traffic, syncs and network
// programming over the phase (before and after: the network programming
// and the sync duration histograms), and the ratio of the p99s.
func reportBeside(b *testing.B, took map[string][]time.Duration, missed map[string]int, before, after map[string][2]histogram) {
	p99 := map[string]float64{}
	for name, d := range took {
		p50, p := percentiles(d)
		p99[name] = p
		b.ReportMetric(p50, "beside-"+name+"-write-to-traffic-p50-ms")
		b.ReportMetric(p, "beside-"+name+"-write-to-traffic-p99-ms")
		b.ReportMetric(float64(missed[name]), "beside-"+name+"-probes-unanswered")
		syncs := after[name][1].minus(before[name][1])
		if syncs.count > 0 {
			b.ReportMetric(syncs.count, "beside-"+name+"-syncs")
			b.ReportMetric(syncs.sum/syncs.count*1000, "beside-"+name+"-sync-mean-ms")
		}
		h := after[name][0].minus(before[name][0])
		if h.count == 0 {
			b.Errorf("%s observed no network programming latency over %d changes", name, scaleChurn+len(d))
			continue
		}
		b.ReportMetric(h.count, "beside-"+name+"-netprog-observed")
		b.ReportMetric(h.quantileBound(0.5)*1000, "beside-"+name+"-netprog-p50-le-ms")
		b.ReportMetric(h.quantileBound(0.99)*1000, "beside-"+name+"-netprog-p99-le-ms")
	}
	b.ReportMetric(p99["switchyard"]/p99["kube-proxy"], "sy/kp-write-to-traffic-p99")
}

// besideMoves is how many endpoint moves are followed beside kube-proxy
// at n Services: scaleBesideMovesAt10k at 10k and below, fewer above (each
// waits for kube-proxy's full syncs, which grow with n), at least 10.
func besideMoves(n int) int {
	return max(10, scaleBesideMovesAt10k*10000/max(n, 10000))
}

// pendingMetric is each proxy's gauge of changes not yet programmed.
var pendingMetric = map[string]string{
	"switchyard": "switchyard_sync_pending",
	"kube-proxy": "kubeproxy_sync_proxy_rules_endpoint_changes_pending",
}

// programmed waits until a proxy has observed at least observed network
// programming latencies in all and has nothing pending, and returns how
// long after since that was (-1: not within bound).
func programmed(name string, scrape func() (string, error), observed float64, since time.Time, bound time.Duration) time.Duration {
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		body, err := scrape()
		if err != nil || metric(body, pendingMetric[name]) != 0 {
			continue
		}
		if h, err := parseHistogram(body, netProgrammingMetric); err == nil && h.count >= observed {
			return time.Since(since)
		}
	}
	return -1
}

// histogram is a Prometheus histogram as scraped: cumulative counts by
// upper bound (seconds), in increasing order.
type histogram struct {
	bounds []float64
	counts []float64
	count  float64
	sum    float64
}

// Histograms both proxies export under the same names.
const (
	netProgrammingMetric = "kubeproxy_network_programming_duration_seconds"
	syncDurationMetric   = "kubeproxy_sync_proxy_rules_duration_seconds"
)

// scrapeHistogram reads a histogram from /metrics, its series summed
// (kube-proxy's network programming one has a series per IP family, made
// at its first observation: absent until then).
func scrapeHistogram(b *testing.B, scrape func() (string, error), name string) histogram {
	body, err := scrape()
	if err != nil {
		b.Fatal(err)
	}
	h, err := parseHistogram(body, name)
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// parseHistogram reads a histogram from a /metrics body (empty when
// absent).
func parseHistogram(body, name string) (histogram, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return histogram{}, err
	}
	var h histogram
	fam := fams[name]
	if fam == nil {
		return h, nil
	}
	for _, m := range fam.Metric {
		if m.Histogram == nil {
			return h, fmt.Errorf("%s is a %v", name, fam.GetType())
		}
		h = h.plus(m.Histogram.Bucket, float64(m.Histogram.GetSampleCount()), m.Histogram.GetSampleSum())
	}
	return h, nil
}

// plus adds a series' buckets to h (the same bounds, or h empty).
func (h histogram) plus(buckets []*dto.Bucket, count, sum float64) histogram {
	if h.bounds == nil {
		for _, bk := range buckets {
			h.bounds = append(h.bounds, bk.GetUpperBound())
		}
		h.counts = make([]float64, len(buckets))
	}
	out := histogram{bounds: h.bounds, count: h.count + count, sum: h.sum + sum}
	for i, bk := range buckets {
		out.counts = append(out.counts, h.counts[i]+float64(bk.GetCumulativeCount()))
	}
	return out
}

// minus is what was observed since before (the same bounds, or before
// empty).
func (h histogram) minus(before histogram) histogram {
	out := histogram{bounds: h.bounds, count: h.count - before.count, sum: h.sum - before.sum}
	for i := range h.counts {
		c := h.counts[i]
		if before.counts != nil {
			c -= before.counts[i]
		}
		out.counts = append(out.counts, c)
	}
	return out
}

// quantileBound is the upper bound of the bucket holding quantile q: the
// q-quantile is at most this (+Inf past the last bucket).
func (h histogram) quantileBound(q float64) float64 {
	for i, c := range h.counts {
		if c >= q*h.count {
			return h.bounds[i]
		}
	}
	return math.Inf(1)
}
