//go:build linux

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The images the real node runs, written by the test (no registry here).
const (
	switchyardImageRepo = "switchyard.local/switchyard"
	imageTag            = "e2e"
	appImage            = "switchyard.local/testapp:e2e"
)

// buildNodeImages builds switchyard, switchyard-cni and the test
// application as static binaries and writes the images as one
// docker-archive tarball: switchyard's image holds what the Dockerfile's
// does (its binaries, containernetworking's portmap plugin for hostPorts,
// and Debian's nft, taken from this machine's nftables package), the test application's is one binary, and the pod
// sandbox image is the test application's `pause`. With upstreamBins
// (hack/ensure-e2e.sh's directory) it adds the images upstream's e2e specs
// run (upstream_images.go).
func buildNodeImages(t testing.TB, upstreamBins string) string {
	t.Helper()
	dir := t.TempDir()
	bin := func(pkg string) string {
		out := filepath.Join(dir, filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
		return out
	}
	const mod = "github.com/switchyard-proxy/switchyard/"
	sy, cni, app := bin(mod+"cmd/switchyard"), bin(mod+"cmd/switchyard-cni"), bin(mod+"cmd/switchyard/e2e/testapp")
	nft, err := hostFilesFor("/usr/sbin/nft")
	if err != nil {
		t.Fatal(err)
	}
	portmap := bin("github.com/containernetworking/plugins/plugins/meta/portmap")
	syFiles := append([]imageFile{
		{Path: "/usr/local/bin/switchyard", Source: sy},
		{Path: "/usr/local/bin/switchyard-cni", Source: cni},
		{Path: "/usr/local/bin/switchyard-portmap", Source: portmap},
	}, nft...)
	tarball := filepath.Join(dir, "images.tar")
	specs := []imageSpec{
		{Ref: switchyardImageRepo + ":" + imageTag, Entrypoint: []string{"/usr/local/bin/switchyard"}, Files: syFiles},
		{Ref: appImage, Entrypoint: []string{"/testapp"}, Files: []imageFile{{Path: "/testapp", Source: app}}},
		{Ref: pauseImage, Entrypoint: []string{"/pause", "pause"}, Files: []imageFile{{Path: "/pause", Source: app}}},
	}
	if upstreamBins != "" {
		specs = append(specs, upstreamImages(t, upstreamBins, app)...)
	}
	if err := writeImages(tarball, specs...); err != nil {
		t.Fatal(err)
	}
	return tarball
}

// The test's workload: a Deployment of the test application behind a
// ClusterIP, a NodePort and a LoadBalancer Service, and a prober pod.
const (
	appNamespace = "web"
	appPort      = 8080
	appNodePort  = 30080
	proberPort   = 8081
)

var lbIngress = netip.MustParseAddr("203.0.113.10")

func appDeployment(replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       appPodSpec([]string{"serve", "--tcp", fmt.Sprint(appPort), "--http", "8082"}, 8082),
			},
		},
	}
}

// appPodSpec runs the test application with POD_NAME set, ready once its
// HTTP port answers.
func appPodSpec(args []string, httpPort int32) v1.PodSpec {
	return v1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](2),
		AutomountServiceAccountToken:  ptr.To(false),
		Containers: []v1.Container{{
			Name: "app", Image: appImage, ImagePullPolicy: v1.PullNever, Args: args,
			Env: []v1.EnvVar{{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			ReadinessProbe: &v1.Probe{
				ProbeHandler:  v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(httpPort)}},
				PeriodSeconds: 1,
			},
		}},
	}
}

func appService(name string, typ v1.ServiceType, nodePort int32) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: name},
		Spec: v1.ServiceSpec{Type: typ, Selector: map[string]string{"app": "web"},
			Ports: []v1.ServicePort{{Name: "tcp", Protocol: v1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(appPort), NodePort: nodePort}}},
	}
}

func proberPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: "prober"},
		Spec:       appPodSpec([]string{"prober", "--http", fmt.Sprint(proberPort)}, proberPort),
	}
}

// kubeCheckPod uses the in-cluster config: it reaches the API server at
// the kubernetes Service's ClusterIP, with the pod's service account.
func kubeCheckPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNamespace, Name: "kube-check"},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name: "check", Image: appImage, ImagePullPolicy: v1.PullNever, Args: []string{"kube-check"},
				TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
}

// readyPods are the Running, Ready pods of the web Deployment (names).
func (n *realNode) readyPods() []string {
	ctx, cancel := withTimeout()
	defer cancel()
	pods, err := n.API.Admin.CoreV1().Pods(appNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(&p) {
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return out
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// waitPods waits until the web Deployment has exactly n ready pods and no
// others, and returns their names.
func (n *realNode) waitPods(t testing.TB, count int, not []string) []string {
	t.Helper()
	var got []string
	if err := waitFor(120*time.Second, func() error {
		ctx, cancel := withTimeout()
		defer cancel()
		all, err := n.API.Admin.CoreV1().Pods(appNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return err
		}
		got = n.readyPods()
		for _, p := range got {
			if slices.Contains(not, p) {
				return fmt.Errorf("old pod %s still ready", p)
			}
		}
		if len(got) != count || len(all.Items) != count {
			return fmt.Errorf("%d ready of %d pods, want %d", len(got), len(all.Items), count)
		}
		return nil
	}); err != nil {
		t.Fatalf("web pods: %v", err)
	}
	return got
}

// waitPodIP waits until a pod is ready and returns its IP.
func (n *realNode) waitPodIP(t testing.TB, name string) netip.Addr {
	t.Helper()
	var ip netip.Addr
	if err := waitFor(120*time.Second, func() error {
		p, err := n.API.Admin.CoreV1().Pods(appNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !podReady(p) {
			return fmt.Errorf("pod %s not ready (%s)", name, p.Status.Phase)
		}
		ip, err = netip.ParseAddr(p.Status.PodIP)
		return err
	}); err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
	return ip
}

// helm runs helm inside the node's namespace (where the API server is),
// with its own home directories.
func (n *realNode) helm(t testing.TB, args ...string) string {
	t.Helper()
	home := filepath.Join(n.dir, "helm-home")
	cmd := exec.Command("nsenter", append([]string{"--net=" + netnsPath(n.Host.NS), "--", helmBinary(t),
		"--kubeconfig", n.kubeconfig()}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// installChart installs the chart with dataplane=ovs on the node (its
// OVS, its CNI and state directories, as the node sees them; encap "none" is routed, "vxlan" or
// "geneve" overlay) and waits until the node is Ready.
func (n *realNode) installChart(t testing.TB, encap string) {
	t.Helper()
	values := []string{
		"dataplane=ovs", "image.repository=" + switchyardImageRepo, "image.tag=" + imageTag, "image.pullPolicy=Never",
		"kubeAPIServer=https://" + net.JoinHostPort(n.IP.String(), fmt.Sprint(apiServerPort)),
		"ovs.runDir=" + filepath.Join(n.view, "ovs-run"), "ovs.datapathType=netdev", "ovs.encap=" + encap,
		"ovs.cni.binDir=" + n.inView(n.CNIBin), "ovs.cni.confDir=" + n.inView(n.CNIConf),
		"ovs.cni.ipamDir=" + n.inView(n.IPAM), "ovs.stateDir=" + n.inView(n.State),
		"config.service-counters=100",
	}
	install := []string{"install", "sy", filepath.Join(repoRoot, "charts/switchyard"), "--namespace", chartNamespace, "--wait", "--timeout", "5m"}
	for _, v := range values {
		install = append(install, "--set", v)
	}
	n.helm(t, install...)
	if err := waitFor(120*time.Second, func() error {
		if ready, msg := n.Ready(); !ready {
			return fmt.Errorf("node not Ready: %s", msg)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// mustCreate fails the test if the create f does fails.
func mustCreate(t testing.TB, f func() error) {
	t.Helper()
	if err := f(); err != nil {
		t.Fatal(err)
	}
}

// inView is where the node's containerd, kubelet and pods see path, a
// path under the node's directory.
func (n *realNode) inView(path string) string { return inView(n.dir, n.view, path) }
