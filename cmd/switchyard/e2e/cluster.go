//go:build linux

package e2e

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// realCluster is real nodes (node.go) in one ovstest world, on one
// fabric: the control plane runs on the first, in the kubeadm style, and
// every node has its containerd, kubelet and private Open vSwitch, and its
// own mount namespace in which its directory is seen at one path common to
// all nodes (nodeview.go), so one set of chart values serves them all.
type realCluster struct {
	World *ovstest.Cluster
	API   *cluster
	Nodes []*realNode
	view  string // where every node sees its own directory
}

// clusterNodeIPs are the i-th node's addresses (node-1: 192.168.100.10;
// the world gives each node an IPv6 address too, the cluster is IPv4).
func clusterNodeIPs(i int) []netip.Addr {
	return []netip.Addr{netip.AddrFrom4([4]byte{192, 168, 100, byte(10 + i)}), netip.MustParseAddr(fmt.Sprintf("fd00:100::%d", 10+i))}
}

// nodeTokenOf is the kubelet's token of the named node.
func nodeTokenOf(name string) string { return "switchyard-e2e-" + name }

// newRealCluster builds a world of count nodes (overlay: the underlay on
// an OVS bridge, as tunnels on the userspace datapath need), starts the
// control plane on the first and containerd and a kubelet on each, imports
// the images everywhere, and waits until every node registered and got its
// pod CIDR. Everything is undone when the test ends.
func newRealCluster(t testing.TB, images string, count int, overlay bool) *realCluster {
	t.Helper()
	var specs []ovstest.NodeSpec
	users := []string{kcmToken + ",system:kube-controller-manager,kcm", schedToken + ",system:kube-scheduler,scheduler"}
	for i := range count {
		name := fmt.Sprintf("node-%d", i+1)
		specs = append(specs, ovstest.NodeSpec{Name: name, IPs: clusterNodeIPs(i)})
		users = append(users, nodeTokenOf(name)+",system:node:"+name+",node-"+name+",system:nodes")
	}
	c := &realCluster{World: ovstest.NewCluster(t, overlay, specs...)}
	c.view = filepath.Join(c.World.Dir, "node-view")
	bins := nodeBinaries(t)
	for i, h := range c.World.Nodes {
		c.Nodes = append(c.Nodes, newNodeDirs(t, c.World, h, specs[i].IPs[0], bins))
	}
	first := c.Nodes[0]
	c.API = startClusterWith(t, clusterOptions{NS: first.Host.NS, IP: first.IP.String(), Users: users,
		Args: []string{"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
			"--endpoint-reconciler-type=lease", "--service-node-port-range=30000-32767"}})
	for _, n := range c.Nodes {
		n.API = c.API
	}
	first.startControllers()
	for _, n := range c.Nodes {
		n.view = c.view
		n.at = nodeView(t, n.dir, n.view, n.Host.OVS.Dir, n.Host.NS, n.Name)
		n.runtime = startContainerRuntime(t, n.at, filepath.Join(n.dir, "containerd"), n.CNIBin, n.CNIConf)
		n.runtime.importImages(images)
		n.startKubelet()
	}
	for _, n := range c.Nodes {
		n.waitRegistered()
	}
	return c
}

// newNodeDirs is the node on host h with its directories made (removed,
// with whatever is mounted under them, when the test ends).
func newNodeDirs(t testing.TB, world *ovstest.Cluster, h *ovstest.Node, ip netip.Addr, bins string) *realNode {
	t.Helper()
	n := &realNode{t: t, World: world, Host: h, IP: ip, Name: h.Name, bins: bins}
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
	return n
}

// installChart installs the chart once for the whole cluster (the nodes
// share one set of values: their views) and waits until every node is
// Ready.
func (c *realCluster) installChart(t testing.TB, encap string) {
	t.Helper()
	c.Nodes[0].installChart(t, encap)
	for _, n := range c.Nodes[1:] {
		if err := waitFor(120*time.Second, func() error {
			if ready, msg := n.Ready(); !ready {
				return fmt.Errorf("node %s not Ready: %s", n.Name, msg)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
