//go:build linux

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
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

// cluster is a private etcd and kube-apiserver, on loopback or inside a
// network namespace.
type cluster struct {
	URL    string
	CAFile string
	Admin  *kubernetes.Clientset
	Dyn    dynamic.Interface
	Config *rest.Config // admin
	dir    string
	pki    pki
	opts   clusterOptions

	t       testing.TB
	api     *process
	etcd    *process
	apiBin  string
	apiArgs []string
	starts  int
}

// startAPIServer starts kube-apiserver (again, after stopAPIServer: same
// port, same etcd) and waits until it is ready.
func (c *cluster) startAPIServer() {
	c.t.Helper()
	c.starts++
	c.api = startIn(c.t, c.dir, fmt.Sprintf("kube-apiserver-%d", c.starts), c.opts.NS, c.apiBin, c.apiArgs...)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DialContext: dialerIn(c.opts.NS)}}
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
func cached(t testing.TB, env, script string, args ...string) string {
	t.Helper()
	if v := os.Getenv(env); v != "" {
		return v
	}
	out, err := exec.Command(filepath.Join(repoRoot, script), args...).Output()
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return strings.TrimSpace(string(out))
}

// clusterOptions say where a cluster runs and who may use it.
type clusterOptions struct {
	// NS is the network namespace etcd and kube-apiserver run in (empty:
	// this process's, on loopback ports that are free now).
	NS string
	// IP is the API server's address (default 127.0.0.1); in a namespace
	// it listens on every address there, port 6443, and advertises IP (the
	// kubernetes Service's endpoint).
	IP string
	// Users are more lines of the static token file ("token,user,uid,groups").
	Users []string
	// Args are more kube-apiserver flags.
	Args []string
}

// startCluster starts etcd and kube-apiserver on loopback (RBAC on, token
// auth with one admin token, service-account tokens signed by a fresh key).
func startCluster(t testing.TB) *cluster { return startClusterWith(t, clusterOptions{}) }

// startClusterWith starts etcd and kube-apiserver as the options say.
func startClusterWith(t testing.TB, o clusterOptions) *cluster {
	t.Helper()
	bins := kubeBinaries(t)
	dir := t.TempDir()
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	p := newPKI(t, dir, net.ParseIP(o.IP), net.ParseIP(kubernetesServiceIP))
	etcdPort, peerPort, apiPort, bind := 2379, 2380, 6443, "0.0.0.0"
	if o.NS == "" {
		etcdPort, peerPort, apiPort, bind = freePort(t), freePort(t), freePort(t), o.IP
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcd := startIn(t, dir, "etcd", o.NS, filepath.Join(bins, "etcd"),
		"--name=e2e", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=e2e="+peerURL, "--unsafe-no-fsync", "--log-level=warn")
	etcdClient := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: dialerIn(o.NS)}}
	if err := waitFor(30*time.Second, func() error {
		if etcd.exited() {
			return fmt.Errorf("etcd exited")
		}
		r, err := etcdClient.Get(etcdURL + "/health")
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
	lines := append([]string{adminToken + ",e2e-admin,e2e-admin,system:masters"}, o.Users...)
	if err := os.WriteFile(tokens, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &cluster{URL: fmt.Sprintf("https://%s", net.JoinHostPort(o.IP, fmt.Sprint(apiPort))), CAFile: p.CAFile, dir: dir, t: t, etcd: etcd,
		apiBin: filepath.Join(bins, "kube-apiserver"), pki: p, opts: o}
	c.apiArgs = overrideFlags([]string{
		"--bind-address=" + bind, fmt.Sprintf("--secure-port=%d", apiPort), "--advertise-address=" + o.IP,
		"--etcd-servers=" + etcdURL, "--cert-dir=" + dir,
		"--tls-cert-file=" + p.CertFile, "--tls-private-key-file=" + p.KeyFile,
		"--service-cluster-ip-range=" + serviceCIDR, "--authorization-mode=RBAC",
		"--token-auth-file=" + tokens, "--endpoint-reconciler-type=none",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=" + p.SAPubFile,
		"--service-account-signing-key-file=" + p.SAKeyFile, "--allow-privileged=true",
		"--kubelet-client-certificate=" + p.KubeletClientCert, "--kubelet-client-key=" + p.KubeletClientKey,
		"--kubelet-preferred-address-types=InternalIP,Hostname"}, o.Args)
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

// overrideFlags is base with each --flag=value of more replacing base's
// flag of that name (kube-apiserver appends repeated list flags).
func overrideFlags(base, more []string) []string {
	name := func(a string) string { n, _, _ := strings.Cut(a, "="); return n }
	replaced := map[string]bool{}
	for _, a := range more {
		replaced[name(a)] = true
	}
	var out []string
	for _, a := range base {
		if !replaced[name(a)] {
			out = append(out, a)
		}
	}
	return append(out, more...)
}

// The Service network of every cluster the tests start, and the
// kubernetes and kube-dns Services' ClusterIPs in it.
const (
	serviceCIDR         = "10.96.0.0/16"
	kubernetesServiceIP = "10.96.0.1"
	// clusterDNSIP is the kube-dns Service's ClusterIP, the kubelets'
	// clusterDNS (served only where a test deploys CoreDNS).
	clusterDNSIP = "10.96.0.10"
)

func (c *cluster) restConfig(token string) *rest.Config {
	cfg := &rest.Config{Host: c.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAFile: c.CAFile}, QPS: 200, Burst: 400}
	if c.opts.NS != "" {
		cfg.Dial = dialerIn(c.opts.NS)
	}
	return cfg
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
