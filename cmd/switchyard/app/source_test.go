package app

import (
	"os"
	"path/filepath"
	"testing"
)

// --master replaces the server of the kubeconfig or of the in-cluster
// config and keeps their credentials.
func TestMasterOverridesTheServer(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.96.0.1:443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	sa := filepath.Join(dir, "sa")
	if err := os.MkdirAll(sa, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"token", "ca.crt"} {
		if err := os.WriteFile(filepath.Join(sa, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	defer func(old string) { serviceAccountDir = old }(serviceAccountDir)
	serviceAccountDir = sa

	for _, tc := range []struct {
		name      string
		o         sourceOptions
		host      string
		token     string
		tokenFile string
		caFile    string
	}{
		{name: "kubeconfig alone", o: sourceOptions{kubeconfig: kubeconfig}, host: "https://10.96.0.1:443", token: "abc"},
		{name: "kubeconfig and master", o: sourceOptions{kubeconfig: kubeconfig, master: "https://192.0.2.1:6443"}, host: "https://192.0.2.1:6443", token: "abc"},
		{name: "master in a pod", o: sourceOptions{master: "https://192.0.2.1:6443"}, host: "https://192.0.2.1:6443",
			tokenFile: filepath.Join(sa, "token"), caFile: filepath.Join(sa, "ca.crt")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tc.o.restConfig()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.host || cfg.BearerToken != tc.token || cfg.BearerTokenFile != tc.tokenFile || cfg.CAFile != tc.caFile {
				t.Fatalf("config: host %q token %q tokenFile %q ca %q", cfg.Host, cfg.BearerToken, cfg.BearerTokenFile, cfg.CAFile)
			}
		})
	}
}
