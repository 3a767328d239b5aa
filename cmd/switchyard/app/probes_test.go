package app

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLiveWhileTheInitialListIsSlow: an API server that has not answered
// the initial lists yet (a large cluster, a slow control plane) leaves
// switchyard live (/livez 200: the kubelet must not restart it) and not
// ready (/readyz 503) for as long as it waits, and a stop while it waits
// is a clean exit.
func TestLiveWhileTheInitialListIsSlow(t *testing.T) {
	release := make(chan struct{})
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // every request waits: the lists never come back
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "gone", http.StatusServiceUnavailable)
	}))
	t.Cleanup(api.Close)
	t.Cleanup(func() { close(release) }) // runs first: the handlers return, then the server closes
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: slow, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: slow, user: u}}]
current-context: c
`, api.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	healthz, metricsPort := freePort(t), freePort(t)
	startRun(t, "run", "--dataplane", "test-memory", "--kubeconfig", kubeconfig, "--node-name", "node-1",
		"--informer-sync-timeout", "5m", "--healthz-bind-address", fmt.Sprintf("127.0.0.1:%d", healthz),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort))
	url := func(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", healthz, path) }
	eventually(t, "/livez 200 while listing", func() bool { code, _ := get(url("/livez")); return code == 200 })
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if code, body := get(url("/livez")); code != 200 {
			t.Fatalf("/livez %d while the initial list waits: %s", code, body)
		}
		if code, _ := get(url("/readyz")); code != 503 {
			t.Fatalf("/readyz %d before any sync, want 503", code)
		}
	}
}

// TestAPIServerAddressIsProtected: the API server's address, from the
// kubeconfig switchyard uses, is what no Service may capture.
func TestAPIServerAddressIsProtected(t *testing.T) {
	for _, tc := range []struct{ server, want string }{
		{"https://192.0.2.1:6443", "[192.0.2.1]"},
		{"https://[2001:db8::1]:6443", "[2001:db8::1]"},
	} {
		kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, tc.server)), 0o600); err != nil {
			t.Fatal(err)
		}
		api, err := (&sourceOptions{kubeconfig: kubeconfig}).connect()
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(api.ips(t.Context())); got != tc.want {
			t.Errorf("%s: protected %s, want %s", tc.server, got, tc.want)
		}
	}
	if got := (apiServer{}).ips(t.Context()); got != nil {
		t.Errorf("a file source protects %v, want nothing", got)
	}
}
