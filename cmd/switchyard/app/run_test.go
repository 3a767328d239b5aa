package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// memoryDriver keeps what it was told, for tests.
type memoryDriver struct {
	mu    sync.Mutex
	ports graph.Index
	syncs int
	fail  bool
	hold  string // the Service whose ports it holds back ("": none)
}

// held is what the driver holds back: the ports of d.hold.
func (d *memoryDriver) held() error {
	var parts []dataplanes.DegradedPart
	for _, sp := range d.ports.Sorted() {
		if d.hold != "" && sp.Name.Name == d.hold {
			parts = append(parts, dataplanes.DegradedPart{ServicePort: sp.Name, Reason: "TestRefused", Message: "the test dataplane refuses it"})
		}
	}
	if parts == nil {
		return nil
	}
	return &dataplanes.Degraded{Parts: parts, Retry: time.Now().Add(time.Hour)}
}

func (d *memoryDriver) Sync(_ context.Context, s graph.Snapshot) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.syncs++
	if d.fail {
		return errors.New("dataplane is down")
	}
	d.ports = graph.IndexOf(s.ServicePorts)
	return d.held()
}

func (d *memoryDriver) Apply(_ context.Context, delta graph.Delta) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail {
		return errors.New("dataplane is down")
	}
	d.ports.Apply(delta)
	return d.held()
}

func (d *memoryDriver) Cleanup(context.Context) error { return nil }
func (d *memoryDriver) Close() error                  { return nil }

func (d *memoryDriver) names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n []string
	for _, sp := range d.ports.Sorted() {
		n = append(n, sp.Name.String())
	}
	return n
}

type memoryFactory struct {
	fail bool
	hold string
	mu   sync.Mutex
	last *memoryDriver
}

func (f *memoryFactory) Description() string { return "test driver" }
func (f *memoryFactory) Capabilities() dataplanes.Capabilities {
	var c dataplanes.Capabilities
	for _, x := range dataplanes.All {
		if x != dataplanes.SCTP {
			c.Supported = append(c.Supported, x)
		}
	}
	c.Gaps = map[dataplanes.Capability]string{dataplanes.SCTP: "test driver skips SCTP"}
	return c
}
func (f *memoryFactory) AddFlags(*pflag.FlagSet) {}
func (f *memoryFactory) New(context.Context, dataplanes.Env) (dataplanes.Driver, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = &memoryDriver{fail: f.fail, hold: f.hold}
	return f.last, nil
}
func (f *memoryFactory) Render(w io.Writer, _ dataplanes.Env, s graph.Snapshot) error {
	for _, sp := range s.ServicePorts {
		fmt.Fprintln(w, sp.Name)
	}
	return nil
}
func (f *memoryFactory) driver() *memoryDriver {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

var (
	memory  = &memoryFactory{}
	failing = &memoryFactory{fail: true}
	holding = &memoryFactory{hold: "checkout"}
)

func init() {
	dataplanes.Register("test-memory", memory)
	dataplanes.Register("test-failing", failing)
	dataplanes.Register("test-holding", holding)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// startRun runs `switchyard run` in the background until the test ends.
func startRun(t *testing.T, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		code, _, errOut := runCmdCtx(ctx, args...)
		if code != 0 {
			t.Logf("run exited %d: %s", code, errOut)
		}
		done <- code
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("run exited %d after cancel", code)
			}
		case <-time.After(10 * time.Second):
			t.Error("run did not stop")
		}
	})
}

func runCmdCtx(ctx context.Context, args ...string) (int, string, string) {
	var out, errOut strings.Builder
	code := Run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunOnce(t *testing.T) {
	code, _, errOut := runCmd(t, "run", "--dataplane", "test-memory", "--file", clusterFile, "--node-name", "node-1", "--once")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := len(memory.driver().names()); got != 10 {
		t.Fatalf("driver holds %d service ports, want 10", got)
	}
}

func TestRunServesHealthMetricsAndFollowsTheFile(t *testing.T) {
	dir := t.TempDir()
	cluster := filepath.Join(dir, "cluster.yaml")
	hcPort := freePort(t)
	base, err := os.ReadFile(clusterFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cluster, []byte(strings.Replace(string(base), "healthCheckNodePort: 32001", fmt.Sprintf("healthCheckNodePort: %d", hcPort), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	healthz, metricsPort := freePort(t), freePort(t)
	startRun(t, "run", "--dataplane", "test-memory", "--file", cluster, "--node-name", "node-1",
		"--min-sync-period", "10ms", "--healthz-bind-address", fmt.Sprintf("127.0.0.1:%d", healthz),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort), "--healthcheck-bind-ip", "127.0.0.1")

	eventually(t, "the first sync", func() bool { d := memory.driver(); return d != nil && len(d.names()) == 10 })
	for _, path := range []string{"/healthz", "/readyz", "/livez"} {
		eventually(t, path+" 200", func() bool { code, _ := get(fmt.Sprintf("http://127.0.0.1:%d%s", healthz, path)); return code == 200 })
	}

	// The health-check node port of the ETP=Local LoadBalancer answers with
	// the count of this node's ready endpoints.
	var rep struct {
		Service             struct{ Namespace, Name string }
		LocalEndpoints      int
		ServiceProxyHealthy bool
	}
	eventually(t, "health check node port", func() bool {
		code, body := get(fmt.Sprintf("http://127.0.0.1:%d/", hcPort))
		return code == 200 && json.Unmarshal([]byte(body), &rep) == nil
	})
	if rep.Service.Name != "checkout" || rep.LocalEndpoints != 1 || !rep.ServiceProxyHealthy {
		t.Fatalf("health check reply %+v", rep)
	}

	// /metrics carries kube-proxy's names and ours (the sync's own metrics
	// are recorded just after the health-check ports start serving).
	var body string
	eventually(t, "sync metrics", func() bool {
		_, body = get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
		return strings.Contains(body, "kubeproxy_sync_proxy_rules_duration_seconds")
	})
	for _, name := range []string{"kubeproxy_sync_proxy_rules_duration_seconds", "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
		"kubeproxy_network_programming_duration_seconds", "kubeproxy_sync_proxy_rules_endpoint_changes_total",
		"kubeproxy_sync_proxy_rules_service_changes_total", "switchyard_rejected_objects_total", "switchyard_driver_apply_errors_total",
		"switchyard_unhonoured_service_ports", "go_goroutines"} {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	// /proxyMode, as kube-proxy's: the mode (here the dataplane).
	if code, mode := get(fmt.Sprintf("http://127.0.0.1:%d/proxyMode", metricsPort)); code != 200 || mode != "test-memory" {
		t.Errorf("/proxyMode: %d %q, want 200 \"test-memory\"", code, mode)
	}

	// Editing the file reaches the driver; the LB's local endpoint going
	// away turns its health check to 503.
	edited := strings.Replace(string(base), "healthCheckNodePort: 32001", fmt.Sprintf("healthCheckNodePort: %d", hcPort), 1)
	edited = strings.Replace(edited, "- addresses: [10.244.1.20]\n  conditions: {ready: true, serving: true, terminating: false}\n  nodeName: node-1",
		"- addresses: [10.244.1.20]\n  conditions: {ready: false, serving: false, terminating: false}\n  nodeName: node-1", 1)
	edited += "---\napiVersion: v1\nkind: Service\nmetadata: {name: late, namespace: shop}\nspec:\n  clusterIP: 10.96.30.1\n  ports: [{name: http, port: 80}]\n"
	if err := os.WriteFile(cluster, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new service in the driver", func() bool { return slices.Contains(memory.driver().names(), "shop/late:http/TCP") })
	eventually(t, "health check 503", func() bool {
		code, _ := get(fmt.Sprintf("http://127.0.0.1:%d/", hcPort))
		return code == 503
	})
}

func TestHealthzTurns503WhenSyncsStall(t *testing.T) {
	healthz, metricsPort := freePort(t), freePort(t)
	startRun(t, "run", "--dataplane", "test-failing", "--file", clusterFile, "--node-name", "node-1",
		"--min-sync-period", "10ms", "--sync-period", "300ms",
		"--healthz-bind-address", fmt.Sprintf("127.0.0.1:%d", healthz), "--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort))
	var body string
	eventually(t, "/healthz 503", func() bool {
		var code int
		code, body = get(fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz))
		return code == 503
	})
	if !strings.Contains(body, `"lastError":"dataplane is down"`) {
		t.Errorf("healthz body %s", body)
	}
	// Never synced: not ready. But the loop turns (each attempt fails
	// fast): live, so the kubelet does not restart what a restart cannot
	// mend.
	if code, _ := get(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthz)); code != 503 {
		t.Errorf("/readyz %d before any sync succeeded, want 503", code)
	}
	if code, _ := get(fmt.Sprintf("http://127.0.0.1:%d/livez", healthz)); code != 200 {
		t.Errorf("/livez %d with the loop turning, want 200", code)
	}
	_, m := get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	if !strings.Contains(m, `switchyard_driver_apply_errors_total{driver="test-failing",kind="full"}`) {
		t.Errorf("/metrics has no apply error for the failing driver")
	}
}

func TestRender(t *testing.T) {
	code, out, errOut := runCmd(t, "render", "--dataplane", "test-memory", "--file", clusterFile, "--node-name", "node-1")
	if code != 0 || !strings.HasPrefix(out, "kube-system/kube-dns:dns/UDP\n") || strings.Count(out, "\n") != 10 {
		t.Fatalf("exit %d, out %q, err %q", code, out, errOut)
	}
}

// A Service the driver holds back leaves the proxy healthy: /healthz is
// 200 and lists it, switchyard_degraded_parts counts it, and `switchyard
// graph --from` shows it degraded, every other service port programmed.
func TestHeldBackServicesAreDegradedNotUnhealthy(t *testing.T) {
	healthz, metricsPort := freePort(t), freePort(t)
	startRun(t, "run", "--dataplane", "test-holding", "--file", clusterFile, "--node-name", "node-1",
		"--min-sync-period", "10ms", "--healthz-bind-address", fmt.Sprintf("127.0.0.1:%d", healthz),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort))
	var body string
	eventually(t, "/healthz listing the held Service", func() bool {
		var code int
		code, body = get(fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz))
		return code == 200 && strings.Contains(body, `"degraded":["shop/checkout:https/TCP: TestRefused: the test dataplane refuses it"]`)
	})
	eventually(t, "the metric", func() bool {
		_, m := get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
		return strings.Contains(m, `switchyard_degraded_parts{driver="test-holding"} 1`)
	})
	code, out, errOut := runCmd(t, "graph", "--from", fmt.Sprintf("127.0.0.1:%d", metricsPort))
	if code != 0 {
		t.Fatalf("graph --from: %d %s", code, errOut)
	}
	var degraded, programmed int
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "shop/checkout:") && strings.HasSuffix(strings.TrimSpace(line), "degraded: TestRefused"):
			degraded++
		case strings.HasSuffix(strings.TrimSpace(line), "programmed") && !strings.Contains(line, "held back"):
			programmed++
		}
	}
	if degraded != 1 || programmed != 9 || !strings.Contains(out, "1 part(s) held back, the rest programmed:\n  shop/checkout:https/TCP: TestRefused: the test dataplane refuses it") {
		t.Fatalf("graph --from printed (%d degraded, %d programmed rows):\n%s", degraded, programmed, out)
	}
	code, out, _ = runCmd(t, "graph", "--from", fmt.Sprintf("127.0.0.1:%d", metricsPort), "-o", "json")
	var doc struct {
		Graph    struct{ ServicePorts []any }
		Degraded []struct{ ServicePort, Reason string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Graph.ServicePorts) != 10 ||
		len(doc.Degraded) != 1 || doc.Degraded[0].ServicePort != "shop/checkout:https/TCP" {
		t.Fatalf("graph --from -o json: %d %s", code, out)
	}
}
