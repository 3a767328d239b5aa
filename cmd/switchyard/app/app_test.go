package app

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const clusterFile = "../../../examples/cluster.yaml"

// runCmd runs the command in-process and returns exit code and outputs.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// matchesGolden fails the test unless out is the golden file's content
// (-update rewrites it: check the difference first).
func matchesGolden(t *testing.T, golden, out string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Fatalf("output differs from %s (run with -update after checking):\n%s", golden, out)
	}
}

func TestGraphOutputMatchesFixtures(t *testing.T) {
	for _, format := range []string{"json", "table"} {
		t.Run(format, func(t *testing.T) {
			code, out, errOut := runCmd(t, "graph", "--file", clusterFile, "--node-name", "node-1", "-o", format)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			matchesGolden(t, filepath.Join("testdata", "graph."+format), out)
		})
	}
}

func TestGraphReportsRefusedInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	body := `apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  clusterIP: 10.96.0.10
  ports: [{name: http, port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: shop, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints:
- addresses: [10.244.0.999]
- addresses: [10.244.0.5]
---
kind: Service
apiVersion: v1
metadata: {name: broken}
spec: {ports: [{port: eighty}]}
`
	if err := os.WriteFile(bad, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "graph", "--file", bad, "--node-name", "n")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// The whole table: the valid endpoint in it, the invalid one nowhere.
	want := `node n: 1 service ports

SERVICE PORT       FRONTENDS      POLICY int/ext   AFFINITY  INTERNAL ENDPOINTS  EXTERNAL ENDPOINTS
shop/web:http/TCP  10.96.0.10:80  Cluster/Cluster  -         10.244.0.5:8080     -
`
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("graph output (-want +got):\n%s", d)
	}
	for _, want := range []string{"EndpointSlice shop/web-1 endpoints[0].addresses[0]: InvalidIP", "document 3 (line 17) Service default/broken"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// Services left out as a whole are not refused input, but why a Service
// has no entry is worth showing.
func TestGraphListsServicesNotProxied(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cluster.yaml")
	body := `apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {clusterIP: 10.96.0.10, ports: [{name: http, port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec: {type: ExternalName, externalName: db.example.com}
---
apiVersion: v1
kind: Service
metadata: {name: other, namespace: shop, labels: {service.kubernetes.io/service-proxy-name: another}}
spec: {clusterIP: 10.96.0.11, ports: [{name: http, port: 80}]}
`
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "graph", "--file", file, "--node-name", "n")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "2 Service(s) not proxied:\n  shop/db: ExternalName service\n" +
		"  shop/other: label service.kubernetes.io/service-proxy-name=\"another\" names another proxy\n"
	if !strings.Contains(errOut, want) || !strings.Contains(out, "shop/web:http") {
		t.Errorf("stdout:\n%s\nstderr:\n%s\nwant on stderr:\n%s", out, errOut, want)
	}
}

func TestErrorsAreOneClearLine(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("this: [is not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown driver", []string{"run", "--dataplane", "ebpf", "--file", clusterFile}, 2, `unknown dataplane "ebpf" (known: `},
		{"missing dataplane", []string{"run", "--file", clusterFile}, 2, "--dataplane is required"},
		{"missing file", []string{"graph", "--file", "/nonexistent/cluster.yaml"}, 1, "cluster file: stat /nonexistent/cluster.yaml: no such file"},
		{"missing kubeconfig", []string{"graph", "--kubeconfig", "/nonexistent/kubeconfig"}, 1, "kubeconfig: stat /nonexistent/kubeconfig"},
		{"unreadable kubeconfig", []string{"graph", "--kubeconfig", kubeconfig}, 1, "kubeconfig " + kubeconfig},
		{"file and kubeconfig", []string{"graph", "--kubeconfig", kubeconfig, "--file", clusterFile}, 2, "--file excludes"},
		{"file and master", []string{"graph", "--master", "https://192.0.2.1:6443", "--file", clusterFile}, 2, "--file excludes"},
		{"master not a URL", []string{"graph", "--master", "192.0.2.1:6443"}, 2, `--master "192.0.2.1:6443": want https://host:port`},
		{"master in clear", []string{"graph", "--master", "http://192.0.2.1:8080"}, 2, `--master "http://192.0.2.1:8080": want https://host:port (the token is never sent in clear)`},
		{"master outside a pod", []string{"graph", "--master", "https://192.0.2.1:6443"}, 1, "--master without --kubeconfig uses the pod's service account"},
		{"bad output format", []string{"graph", "--file", clusterFile, "-o", "xml"}, 2, "-o must be json or table"},
		{"bad node port range", []string{"graph", "--file", clusterFile, "--nodeport-range", "9-1"}, 2, "--nodeport-range"},
		{"unknown flag", []string{"graph", "--bogus"}, 2, "unknown flag: --bogus"},
		{"profiling off loopback", []string{"run", "--dataplane", "test-memory", "--file", clusterFile, "--profiling", "--metrics-bind-address", "0.0.0.0:10249"}, 2, "allowed only on a loopback address"},
		{"profiling on every address", []string{"run", "--dataplane", "test-memory", "--file", clusterFile, "--profiling", "--metrics-bind-address", ":10249"}, 2, "allowed only on a loopback address"},
		{"bad sync periods", []string{"run", "--dataplane", "test-memory", "--file", clusterFile, "--min-sync-period", "1m", "--sync-period", "1s"}, 2, "--min-sync-period"},
		{"too many service counters", []string{"run", "--dataplane", "test-memory", "--file", clusterFile, "--service-counters", "5001"}, 2, "--service-counters 5001: want 0 (off) to 5000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCmd(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, errOut)
			}
			lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "switchyard: ") || !strings.Contains(lines[0], tc.want) {
				t.Errorf("stderr = %q, want one line mentioning %q", errOut, tc.want)
			}
		})
	}
}

func TestDriversAndVersion(t *testing.T) {
	code, out, _ := runCmd(t, "drivers")
	if code != 0 || !strings.Contains(out, "test-memory: test driver\n") || !regexp.MustCompile(`\n  sctp +no: test driver skips SCTP\n`).MatchString(out) {
		t.Fatalf("drivers: exit %d\n%s", code, out)
	}
	code, out, _ = runCmd(t, "drivers", "--names")
	if code != 0 || !strings.Contains(out, "test-failing\ntest-holding\ntest-memory\n") {
		t.Fatalf("drivers --names: %q", out)
	}
	code, out, _ = runCmd(t, "version")
	if code != 0 || !strings.HasPrefix(out, "switchyard ") {
		t.Fatalf("version: %q", out)
	}
}
