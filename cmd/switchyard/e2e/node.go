//go:build linux

package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// realNode is one Kubernetes node made for real, inside the network
// namespace of a node of an ovstest world (a fabric router, an external
// client, the node with its own private Open vSwitch):
//
//	client 198.51.100.5 ── fabric ── 192.168.100.10 node-1 (netns)
//	                                  etcd, kube-apiserver (:6443), kube-controller-manager,
//	                                  kube-scheduler, containerd + runc, kubelet, OVS
//
// It is a single-node cluster in the kubeadm style: the control plane runs
// on the node, the API server advertises the node's address (the endpoint
// of the kubernetes Service), and no kube-proxy runs anywhere. Every
// daemon has its own directories under one temporary directory and is
// stopped by PID; the machine's own interfaces, /etc/cni, /opt/cni,
// /var/lib/containerd and /var/lib/kubelet are never touched.
type realNode struct {
	t     testing.TB
	World *ovstest.Cluster
	Host  *ovstest.Node // the node's namespace and its OVS
	IP    netip.Addr
	Name  string
	API   *cluster
	dir   string

	// The node's directories the chart is pointed at, as /opt/cni/bin,
	// /etc/cni/net.d, /var/lib/cni/networks and /var/run/switchyard would be.
	CNIBin, CNIConf, IPAM, State string

	bins       string // kubelet, kube-controller-manager, kube-scheduler
	at         place  // where containerd and the kubelet run: nodeview.go
	view       string // the node's directory as they see it
	runtime    *containerRuntime
	kubelet    *process
	cgroupRoot string
	podLogs    string
}

// The cluster's tokens and networks.
const (
	clusterCIDR   = "10.244.0.0/16"
	kcmToken      = "switchyard-e2e-kcm"
	schedToken    = "switchyard-e2e-scheduler"
	apiServerPort = 6443
)

// nodeBinaries is the directory of kubelet, kube-controller-manager and
// kube-scheduler (hack/ensure-node.sh, which also installs containerd,
// runc and the CNI plugins) unless SWITCHYARD_NODE_DIR names it.
func nodeBinaries(t testing.TB) string {
	return cached(t, "SWITCHYARD_NODE_DIR", "hack/ensure-node.sh")
}

// newRealNode builds the world, starts the control plane, containerd and
// the kubelet, imports the images, and waits until the node registered and
// got its pod CIDR. Everything is undone when the test ends.
func newRealNode(t testing.TB, images string) *realNode {
	t.Helper()
	return newRealCluster(t, images, 1, false).Nodes[0]
}

// startControllers starts kube-controller-manager (node pod CIDRs,
// DaemonSets, Deployments, EndpointSlices, service-account tokens) and
// kube-scheduler on the node, each with its own identity.
func (n *realNode) startControllers() {
	t := n.t
	kcmConfig := n.API.kubeconfig(t, kcmToken)
	p := n.API.pki
	startIn(t, n.API.dir, "kube-controller-manager", n.Host.NS, filepath.Join(n.bins, "kube-controller-manager"),
		"--kubeconfig="+kcmConfig, "--authentication-kubeconfig="+kcmConfig, "--authorization-kubeconfig="+kcmConfig,
		"--bind-address=127.0.0.1", "--secure-port=10257", "--leader-elect=false",
		"--allocate-node-cidrs=true", "--cluster-cidr="+clusterCIDR, "--node-cidr-mask-size=24",
		"--service-cluster-ip-range="+serviceCIDR, "--use-service-account-credentials=true",
		"--service-account-private-key-file="+p.SAKeyFile, "--root-ca-file="+p.CAFile,
		"--controllers=*,-bootstrapsigner,-tokencleaner", "--v=1")
	schedConfig := n.API.kubeconfig(t, schedToken)
	startIn(t, n.API.dir, "kube-scheduler", n.Host.NS, filepath.Join(n.bins, "kube-scheduler"),
		"--kubeconfig="+schedConfig, "--authentication-kubeconfig="+schedConfig, "--authorization-kubeconfig="+schedConfig,
		"--bind-address=127.0.0.1", "--secure-port=10259", "--leader-elect=false", "--v=1")
}

// waitRegistered waits until the kubelet registered the node and the
// controller manager gave it a pod CIDR.
func (n *realNode) waitRegistered() {
	n.t.Helper()
	if err := waitFor(120*time.Second, func() error {
		if n.kubelet.exited() {
			return fmt.Errorf("kubelet exited")
		}
		node, err := n.API.Admin.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(node.Spec.PodCIDRs) == 0 {
			return fmt.Errorf("node %s has no pod CIDR yet", n.Name)
		}
		return nil
	}); err != nil {
		n.t.Fatalf("the node never registered with a pod CIDR: %v", err)
	}
}

// Ready reports the node's Ready condition and its message.
func (n *realNode) Ready() (bool, string) {
	node, err := n.API.Admin.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue, c.Message
		}
	}
	return false, "no Ready condition"
}

// PodCIDR is the node's first pod CIDR.
func (n *realNode) PodCIDR() netip.Prefix {
	node, err := n.API.Admin.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
	if err != nil {
		n.t.Fatal(err)
	}
	return netip.MustParsePrefix(node.Spec.PodCIDRs[0])
}

// kubeconfig is an admin kubeconfig for tools run on the node (helm).
func (n *realNode) kubeconfig() string { return n.API.kubeconfig(n.t, adminToken) }

// Run runs a command inside the node's network namespace (as a process on
// the node's host) and returns its combined output.
func (n *realNode) Run(name string, args ...string) (string, error) {
	return n.World.Exec(n.Host.NS, append([]string{name}, args...)...)
}

// dumpPodLogs prints the last lines of every container's log when the
// test failed (the logs are the kubelet's, in the node's directory).
func (n *realNode) dumpPodLogs() {
	if !n.t.Failed() {
		return
	}
	_ = filepath.Walk(n.podLogs, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(path, ".log") {
			n.t.Logf("last lines of %s:\n%s", strings.TrimPrefix(path, n.podLogs+"/"), tail(path, 30))
		}
		return nil
	})
}

// containerLog is what a pod's container has written so far, from the
// kubelet's log files (<namespace>_<pod>_<uid>/<container>/<n>.log).
func (n *realNode) containerLog(t testing.TB, pod, container string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(n.podLogs, chartNamespace+"_"+pod+"_*", container, "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no log of %s/%s under %s (%v)", pod, container, n.podLogs, err)
	}
	var b strings.Builder
	for _, f := range files {
		content, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(content)
	}
	return b.String()
}
