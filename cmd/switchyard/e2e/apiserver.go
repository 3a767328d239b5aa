//go:build linux

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// repoRoot is the repository root, seen from this package's directory.
const repoRoot = "../../.."

// cluster is a private etcd and kube-apiserver on loopback.
type cluster struct {
	URL    string
	CAFile string
	Admin  *kubernetes.Clientset
	Dyn    dynamic.Interface
	Config *rest.Config // admin
	dir    string

	t       testing.TB
	api     *process
	apiBin  string
	apiArgs []string
	starts  int
}

// startAPIServer starts kube-apiserver (again, after stopAPIServer: same
// port, same etcd) and waits until it is ready.
func (c *cluster) startAPIServer() {
	c.t.Helper()
	c.starts++
	c.api = start(c.t, c.dir, fmt.Sprintf("kube-apiserver-%d", c.starts), c.apiBin, c.apiArgs...)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := waitFor(60*time.Second, func() error {
		if c.api.exited() {
			return fmt.Errorf("kube-apiserver exited")
		}
		req, _ := http.NewRequest("GET", c.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		r, err := client.Do(req)
		if err != nil {
			return err
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			return fmt.Errorf("readyz %d", r.StatusCode)
		}
		return nil
	}); err != nil {
		c.t.Fatalf("kube-apiserver did not become ready: %v", err)
	}
}

// stopAPIServer stops kube-apiserver by its PID (etcd keeps the state).
func (c *cluster) stopAPIServer() { c.api.stop() }

const adminToken = "switchyard-e2e-admin"

// kubeBinaries returns the directory holding kube-apiserver and etcd,
// building them once (hack/ensure-kube.sh) unless SWITCHYARD_KUBE_DIR
// names it.
func kubeBinaries(t testing.TB) string {
	return cached(t, "SWITCHYARD_KUBE_DIR", "hack/ensure-kube.sh")
}

// cached returns what the environment variable names, else what the
// script (which builds once into ~/.cache/switchyard) prints.
func cached(t testing.TB, env, script string) string {
	t.Helper()
	if v := os.Getenv(env); v != "" {
		return v
	}
	out, err := exec.Command(filepath.Join(repoRoot, script)).Output()
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return strings.TrimSpace(string(out))
}

// startCluster starts etcd and kube-apiserver (RBAC on, token auth with
// one admin token, service-account tokens signed by a fresh key).
func startCluster(t testing.TB) *cluster {
	t.Helper()
	bins := kubeBinaries(t)
	dir := t.TempDir()
	p := newPKI(t, dir)
	etcdPort, peerPort, apiPort := freePort(t), freePort(t), freePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcd := start(t, dir, "etcd", filepath.Join(bins, "etcd"),
		"--name=e2e", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=e2e="+peerURL, "--unsafe-no-fsync", "--log-level=warn")
	if err := waitFor(30*time.Second, func() error {
		if etcd.exited() {
			return fmt.Errorf("etcd exited")
		}
		r, err := http.Get(etcdURL + "/health")
		if err != nil {
			return err
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			return fmt.Errorf("etcd health %d", r.StatusCode)
		}
		return nil
	}); err != nil {
		t.Fatalf("etcd did not come up: %v", err)
	}

	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(adminToken+",e2e-admin,e2e-admin,system:masters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &cluster{URL: fmt.Sprintf("https://127.0.0.1:%d", apiPort), CAFile: p.CAFile, dir: dir, t: t,
		apiBin: filepath.Join(bins, "kube-apiserver")}
	c.apiArgs = []string{
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", apiPort), "--advertise-address=127.0.0.1",
		"--etcd-servers=" + etcdURL, "--cert-dir=" + dir,
		"--tls-cert-file=" + p.CertFile, "--tls-private-key-file=" + p.KeyFile,
		"--service-cluster-ip-range=10.96.0.0/16", "--authorization-mode=RBAC",
		"--token-auth-file=" + tokens, "--endpoint-reconciler-type=none",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=" + p.SAPubFile,
		"--service-account-signing-key-file=" + p.SAKeyFile, "--allow-privileged=true"}
	c.startAPIServer()
	c.Config = c.restConfig(adminToken)
	var err error
	if c.Admin, err = kubernetes.NewForConfig(c.Config); err != nil {
		t.Fatal(err)
	}
	if c.Dyn, err = dynamic.NewForConfig(c.Config); err != nil {
		t.Fatal(err)
	}
	// The bootstrap controllers create kube-system and the system priority
	// classes shortly after /readyz.
	if err := waitFor(30*time.Second, func() error {
		_, err := c.Admin.SchedulingV1().PriorityClasses().Get(context.Background(), "system-node-critical", metav1.GetOptions{})
		return err
	}); err != nil {
		t.Fatalf("system-node-critical never appeared: %v", err)
	}
	return c
}

func (c *cluster) restConfig(token string) *rest.Config {
	return &rest.Config{Host: c.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAFile: c.CAFile}, QPS: 200, Burst: 400}
}

// kubeconfig writes a kubeconfig file using token.
func (c *cluster) kubeconfig(t testing.TB, token string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthority: c.CAFile}
	cfg.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	cfg.CurrentContext = "e2e"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// addNodes writes the world's two Nodes with their pod CIDRs and
// addresses (status is written separately, as a kubelet does).
func (c *cluster) addNodes(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	for _, want := range nodes() {
		n, err := c.Admin.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status = want.Status
		if _, err := c.Admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// namespace creates a namespace.
func (c *cluster) namespace(t testing.TB, name string) {
	t.Helper()
	if _, err := c.Admin.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
