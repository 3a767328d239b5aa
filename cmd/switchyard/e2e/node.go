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

// The node, its tokens and its networks.
const (
	nodeName      = "node-1"
	clusterCIDR   = "10.244.0.0/16"
	nodeToken     = "switchyard-e2e-node"
	kcmToken      = "switchyard-e2e-kcm"
	schedToken    = "switchyard-e2e-scheduler"
	apiServerPort = 6443
)

var realNodeIP = netip.MustParseAddr("192.168.100.10")

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
	n := &realNode{t: t, IP: realNodeIP, Name: nodeName, bins: nodeBinaries(t)}
	// The world gives every node an IPv6 address too; the cluster is IPv4.
	n.World = ovstest.NewCluster(t, false, ovstest.NodeSpec{Name: nodeName, IPs: []netip.Addr{realNodeIP, netip.MustParseAddr("fd00:100::10")}})
	n.Host = n.World.Nodes[0]
	dir, err := os.MkdirTemp("", "sy-node-")
	if err != nil {
		t.Fatal(err)
	}
	n.dir = dir
	t.Cleanup(func() { removeTree(t, dir) })
	n.CNIBin, n.CNIConf, n.IPAM = filepath.Join(dir, "cni-bin"), filepath.Join(dir, "cni-conf"), filepath.Join(dir, "cni-ipam")
	n.State, n.podLogs = filepath.Join(dir, "switchyard"), filepath.Join(dir, "pod-logs")
	for _, d := range []string{n.CNIBin, n.CNIConf, n.IPAM, n.State, n.podLogs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	n.API = startClusterWith(t, clusterOptions{NS: n.Host.NS, IP: realNodeIP.String(),
		Users: []string{
			nodeToken + ",system:node:" + nodeName + ",node-" + nodeName + ",system:nodes",
			kcmToken + ",system:kube-controller-manager,kcm",
			schedToken + ",system:kube-scheduler,scheduler",
		},
		Args: []string{"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
			"--endpoint-reconciler-type=lease", "--service-node-port-range=30000-32767"}})
	n.startControllers()
	n.view = dir + "-view"
	n.at = nodeView(t, dir, n.view, n.Host.OVS.Dir, n.Host.NS)
	n.runtime = startContainerRuntime(t, n.at, filepath.Join(dir, "containerd"), n.CNIBin, n.CNIConf)
	n.runtime.importImages(images)
	n.startKubelet()
	n.waitRegistered()
	return n
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
