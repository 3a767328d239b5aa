//go:build linux

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestRealNode is `make e2e-node`: a real node (kubelet, containerd, runc,
// the control plane's controllers) with no kube-proxy, the chart installed
// by a real helm with dataplane=ovs, and a workload served through
// Services from a pod, from the node and from outside while it is scaled,
// rolled out and deleted; `kubectl switchyard explain` asked where a
// pod's connection goes; switchyard restarted under live connections; the
// chart upgraded, its DaemonSet deleted and re-created, switchyard stopped
// while the API server refuses it, and the chart uninstalled, while the
// node keeps its network (only the uninstall removes what switchyard
// programmed).
func TestRealNode(t *testing.T) {
	ovstest.Require(t)
	images := buildNodeImages(t, "")
	n := newRealNode(t, images)
	var lat latencies
	t.Cleanup(func() {
		lat.write(t, "Real node (make e2e-node): kubelet v1.36, containerd 1.6, kube-apiserver v1.36, switchyard from the chart")
	})

	node := fromNamespace("node", n.Host.NS)
	outside := fromNamespace("outside", n.World.Client)
	apiVIP := netip.AddrPortFrom(netip.MustParseAddr(kubernetesServiceIP), 443)

	// Before switchyard: no proxy serves the kubernetes Service, and the
	// node has no pod network.
	if err := connects(n.Host.NS, apiVIP); err == nil {
		t.Fatal("the kubernetes Service's ClusterIP answers on the node before any proxy runs")
	}
	if ready, _ := n.Ready(); ready {
		t.Fatal("the node is Ready before it has a pod network")
	}
	// The node's own network, held from outside through every step below
	// (as an SSH session would be).
	const nodeEchoPort = 2222
	ovstest.ServeEcho(t, n.Host.NS, nodeEchoPort)
	nodeConn := holdConn(t, "outside -> node's own address", n.World.Client, netip.AddrPortFrom(n.IP, nodeEchoPort))

	chart := filepath.Join(repoRoot, "charts/switchyard")
	start := time.Now()
	n.installChart(t, "none")
	lat.note("helm install -> switchyard running, switchyard-cni installed, node Ready: %d ms", time.Since(start).Milliseconds())
	syPod := n.switchyardPod(t, "")
	if err := waitFor(30*time.Second, func() error { return connects(n.Host.NS, apiVIP) }); err != nil {
		t.Fatalf("the node does not reach the kubernetes Service's ClusterIP: %v", err)
	}

	// The classic first test of a kube-proxy replacement: a pod with the
	// in-cluster config reaches the API server through the ClusterIP.
	ctx := context.Background()
	if _, err := n.API.Admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.kubeCheck(t, &lat)

	// The workload and its Services.
	start = time.Now()
	mustCreate(t, func() error {
		_, err := n.API.Admin.AppsV1().Deployments(appNamespace).Create(ctx, appDeployment(2), metav1.CreateOptions{})
		return err
	})
	svc := map[string]*v1.Service{}
	for _, s := range []*v1.Service{appService("web", v1.ServiceTypeClusterIP, 0), appService("web-np", v1.ServiceTypeNodePort, appNodePort),
		appService("web-lb", v1.ServiceTypeLoadBalancer, appNodePort+1)} {
		got, err := n.API.Admin.CoreV1().Services(appNamespace).Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		svc[s.Name] = got
	}
	lb := svc["web-lb"]
	lb.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: lbIngress.String()}}
	if _, err := n.API.Admin.CoreV1().Services(appNamespace).UpdateStatus(ctx, lb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.World.RouteToNode(netip.PrefixFrom(lbIngress, 32), n.Host)
	mustCreate(t, func() error {
		_, err := n.API.Admin.CoreV1().Pods(appNamespace).Create(ctx, proberPod(), metav1.CreateOptions{})
		return err
	})
	proberIP := n.waitPodIP(t, "prober")
	pod := fromPod("pod", n.Host.NS, netip.AddrPortFrom(proberIP, proberPort))
	clusterIP := netip.AddrPortFrom(netip.MustParseAddr(svc["web"].Spec.ClusterIP), 80)
	nodePort := netip.AddrPortFrom(n.IP, appNodePort)
	paths := []probePath{
		{pod, clusterIP}, {pod, nodePort}, {node, clusterIP}, {node, nodePort},
		{outside, nodePort}, {outside, netip.AddrPortFrom(lbIngress, 80)},
	}
	pods := n.waitPods(t, 2, nil)
	everywhere(t, paths, pods)
	lat.note("Deployment (2 pods) and 3 Services created -> served on every path: %d ms (pod start included)", time.Since(start).Milliseconds())

	// A tenant's Service naming the API server's address and port as an
	// external IP is refused with a Warning Event; the node keeps its API
	// server (the kubelet's own connection, and every step below, use it).
	grab := appService("grab-api", v1.ServiceTypeClusterIP, 0)
	grab.Spec.ExternalIPs, grab.Spec.Ports[0].Port = []string{n.IP.String()}, apiServerPort
	mustCreate(t, func() error {
		_, err := n.API.Admin.CoreV1().Services(appNamespace).Create(ctx, grab, metav1.CreateOptions{})
		return err
	})
	if err := waitFor(30*time.Second, func() error {
		evs, err := n.API.Admin.CoreV1().Events(appNamespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=grab-api"})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "ProtectedIP" && e.Type == v1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("no ProtectedIP Warning Event on the Service among %d events", len(evs.Items))
	}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := servedBy(node, netip.AddrPortFrom(n.IP, apiServerPort), pods, 2); ok {
		t.Fatal("the node's connections to the API server's address reach the Service's pods")
	}
	if err := n.API.Admin.CoreV1().Services(appNamespace).Delete(ctx, "grab-api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Scaled up and down, rolled out: each change is followed by traffic.
	scale := func(to int32) func() error {
		return func() error {
			_, err := n.API.Admin.AppsV1().Deployments(appNamespace).Patch(ctx, "web", types.MergePatchType,
				[]byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, to)), metav1.PatchOptions{})
			return err
		}
	}
	follows := func(count int, old []string) func() (bool, string) {
		return func() (bool, string) {
			ready := n.readyPods()
			if len(ready) != count {
				return false, fmt.Sprintf("%d ready pods", len(ready))
			}
			for _, p := range ready {
				if slices.Contains(old, p) {
					return false, "old pod " + p + " still ready"
				}
			}
			return servedBy(node, clusterIP, ready, 4*count)
		}
	}
	lat.follow(t, "scale 2 -> 3 (the new pod's start included)", 90*time.Second, scale(3), follows(3, nil))
	everywhere(t, paths, n.readyPods())
	lat.follow(t, "scale 3 -> 1", 30*time.Second, scale(1), follows(1, nil))
	everywhere(t, paths, n.readyPods())
	old := n.readyPods()
	lat.follow(t, "rollout of a new pod template, 1 -> 2 replicas (pod start included)", 90*time.Second, func() error {
		_, err := n.API.Admin.AppsV1().Deployments(appNamespace).Patch(ctx, "web", types.MergePatchType,
			[]byte(`{"spec":{"replicas":2,"template":{"metadata":{"annotations":{"e2e/rollout":"2"}}}}}`), metav1.PatchOptions{})
		return err
	}, follows(2, old))
	pods = n.waitPods(t, 2, old)
	everywhere(t, paths, pods)
	n.explainCheck(t, proberIP, clusterIP, pods)

	// switchyard's pod deleted: the DaemonSet makes a new one; established
	// connections through Services survive, new ones work once it is back.
	held := []*heldConn{
		holdConn(t, "outside -> NodePort", n.World.Client, nodePort),
		holdConn(t, "node -> ClusterIP", n.Host.NS, clusterIP),
	}
	start = time.Now()
	if err := n.API.Admin.CoreV1().Pods(chartNamespace).Delete(ctx, syPod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	syPod = n.switchyardPod(t, syPod)
	lat.note("switchyard pod deleted -> its replacement Ready: %d ms", time.Since(start).Milliseconds())
	time.Sleep(time.Second) // the held connections keep going with the new switchyard
	for _, h := range append(held, nodeConn) {
		h.check(t)
	}
	everywhere(t, paths, pods)

	// helm upgrade with changed values rolls the DaemonSet: the node and
	// the connections through Services keep going. The new pod has a
	// memory limit, which its Go runtime takes nine tenths of as its own.
	start = time.Now()
	n.helm(t, "upgrade", "sy", chart, "--namespace", chartNamespace, "--reuse-values", "--set", "logLevel=2",
		"--set", "resources.limits.memory=512Mi", "--wait", "--timeout", "5m")
	syPod = n.switchyardPod(t, syPod)
	lat.note("helm upgrade (logLevel 0 -> 2, a memory limit) -> new switchyard pod Ready: %d ms", time.Since(start).Milliseconds())
	const goLimit = `"Go memory limit set from the container's memory limit" bytes=483183820 `
	if log := n.containerLog(t, syPod, "switchyard"); !strings.Contains(log, goLimit) {
		t.Errorf("switchyard with a 512Mi memory limit did not log %s; its log:\n%s", goLimit, log)
	}
	time.Sleep(time.Second)
	for _, h := range append(held, nodeConn) {
		h.check(t)
	}
	everywhere(t, paths, pods)

	// Stops that are not an uninstall keep the dataplane: the DaemonSet
	// deleted and re-created, and switchyard stopping while the API server
	// refuses it (403).
	checks := func(what string) {
		t.Helper()
		t.Logf("checking the node's network %s", what)
		for _, h := range append(held, nodeConn) {
			h.check(t)
		}
		everywhere(t, paths, pods)
	}
	syPod = n.replaceDaemonSet(t, &lat, syPod, checks)
	syPod = n.refuseWhileRestarting(t, &lat, syPod, checks)
	start = time.Now()
	n.helm(t, "upgrade", "sy", chart, "--namespace", chartNamespace, "--reuse-values", "--force", "--set", "logLevel=1", "--wait", "--timeout", "5m")
	n.switchyardPod(t, syPod)
	lat.note("helm upgrade --force (logLevel 2 -> 1) -> new switchyard pod Ready: %d ms", time.Since(start).Milliseconds())
	checks("after helm upgrade --force")
	for _, h := range held {
		h.end()
	}

	// A Service deleted stops answering.
	lat.follow(t, "NodePort Service deleted", 30*time.Second, func() error {
		return n.API.Admin.CoreV1().Services(appNamespace).Delete(ctx, "web-np", metav1.DeleteOptions{})
	}, func() (bool, string) { return unreachable(outside, nodePort) })
	if ok, why := unreachable(node, nodePort); !ok {
		t.Errorf("node -> deleted NodePort: %s", why)
	}
	if why := servedWithin(10*time.Second, outside, netip.AddrPortFrom(lbIngress, 80), pods); why != "" {
		t.Errorf("the LoadBalancer Service went with the NodePort one: %s", why)
	}

	// The workload goes, then the chart: nothing switchyard owns remains
	// in OVS or on the node, and the node keeps its network.
	n.deleteNamespace(t, appNamespace)
	start = time.Now()
	n.helm(t, "uninstall", "sy", "--namespace", chartNamespace, "--wait", "--timeout", "3m")
	if err := waitFor(60*time.Second, n.nothingLeft); err != nil {
		t.Fatalf("after helm uninstall: %v", err)
	}
	lat.note("helm uninstall -> nothing of switchyard's left on the node: %d ms", time.Since(start).Milliseconds())
	nodeConn.check(t)
}

// connects reports whether a TCP connection from a namespace is accepted.
func connects(ns string, dst netip.AddrPort) error {
	return ovstest.InNS(ns, func() error {
		c, err := net.DialTimeout("tcp", dst.String(), time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// switchyardPod waits for the chart's switchyard pod (not the one named
// not) to be Ready and returns its name.
func (n *realNode) switchyardPod(t testing.TB, not string) string {
	t.Helper()
	var name string
	if err := waitFor(120*time.Second, func() error {
		ctx, cancel := withTimeout()
		defer cancel()
		pods, err := n.API.Admin.CoreV1().Pods(chartNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=switchyard"})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Name != not && p.DeletionTimestamp == nil && podReady(&p) {
				name = p.Name
				return nil
			}
		}
		return fmt.Errorf("no ready switchyard pod (other than %q) among %d", not, len(pods.Items))
	}); err != nil {
		t.Fatal(err)
	}
	return name
}

// kubeCheck runs the in-cluster client pod and waits for its success.
func (n *realNode) kubeCheck(t testing.TB, lat *latencies) {
	t.Helper()
	start := time.Now()
	mustCreate(t, func() error {
		_, err := n.API.Admin.CoreV1().Pods(appNamespace).Create(context.Background(), kubeCheckPod(), metav1.CreateOptions{})
		return err
	})
	var msg string
	if err := waitFor(120*time.Second, func() error {
		p, err := n.API.Admin.CoreV1().Pods(appNamespace).Get(context.Background(), "kube-check", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Terminated != nil {
				msg = strings.TrimSpace(s.State.Terminated.Message)
			}
		}
		switch p.Status.Phase {
		case v1.PodSucceeded:
			return nil
		case v1.PodFailed:
			t.Fatalf("the in-cluster client failed: %s", msg)
		}
		return fmt.Errorf("kube-check is %s", p.Status.Phase)
	}); err != nil {
		t.Fatal(err)
	}
	lat.note("pod with the in-cluster config -> API server through the kubernetes ClusterIP: %d ms (%s)",
		time.Since(start).Milliseconds(), strings.ReplaceAll(msg, "\n", "; "))
}

// deleteNamespace deletes a namespace and waits until its pods are gone
// (their sandboxes torn down by the kubelet through switchyard-cni).
func (n *realNode) deleteNamespace(t testing.TB, ns string) {
	t.Helper()
	ctx := context.Background()
	if err := n.API.Admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(120*time.Second, func() error {
		_, err := n.API.Admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("namespace %s still there (%v)", ns, err)
	}); err != nil {
		t.Fatal(err)
	}
}

// nothingLeft checks that nothing switchyard owns is on the node: no
// bridge or port of its in OVS, no CNI configuration or plugin, no
// nftables table, no routes of its protocol.
func (n *realNode) nothingLeft() error {
	var left []string
	if out := n.Host.OVS.Vsctl("list-br"); strings.Contains(out, "br-sy") {
		left = append(left, "bridge br-sy")
	}
	if out := n.Host.OVS.Vsctl("--columns=name", "find", "interface", "external_ids:switchyard.io/container-id!=\"\""); strings.TrimSpace(out) != "" {
		left = append(left, "pod ports: "+out)
	}
	for _, f := range []string{filepath.Join(n.CNIConf, "10-switchyard.conflist"), filepath.Join(n.CNIBin, "switchyard"), filepath.Join(n.CNIBin, "switchyard-portmap")} {
		if _, err := os.Stat(f); err == nil {
			left = append(left, f)
		}
	}
	if out, _ := n.Run("nft", "list", "tables"); strings.Contains(out, "switchyard") {
		left = append(left, "nftables: "+out)
	}
	if out, _ := n.Run("ip", "route", "show", "proto", "83", "table", "all"); strings.TrimSpace(out) != "" {
		left = append(left, "routes: "+out)
	}
	for _, fam := range []string{"-4", "-6"} {
		if out, _ := n.Run("ip", fam, "rule", "show", "table", "5359"); strings.TrimSpace(out) != "" {
			left = append(left, "ip rules: "+out)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("left: %s", strings.Join(left, "; "))
	}
	return nil
}
