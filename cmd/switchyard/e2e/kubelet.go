//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startKubelet starts the node's kubelet (v1.36, on Debian's containerd
// 1.6: hack/ensure-node.sh says why that works) in the node's namespace, with its own root
// directory, pod log directory and cgroup root, and undoes what it leaves
// when the test ends: the pods' cgroups, the kernel settings it changes,
// the log links it makes in /var/log/containers.
func (n *realNode) startKubelet() {
	t := n.t
	t.Helper()
	dir := filepath.Join(n.dir, "kubelet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n.cgroupRoot = n.makeCgroupRoot()
	restoreKernelSettings(t)
	cleanLogLinks(t, n.podLogs)

	// A test node: no eviction or image garbage collection from disk use
	// (the machine's disk is not the test's), no swap check, cgroup v1
	// (no systemd here: the cgroupfs driver). The kubelet's API
	// authenticates and authorizes through the API server, as kubeadm
	// sets it up.
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: %q
failCgroupV1: false
failSwapOn: false
oomScoreAdj: 0
containerRuntimeEndpoint: unix://%s
podLogsDir: %q
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization:
  mode: Webhook
evictionHard:
  memory.available: "50Mi"
  nodefs.available: "0%%"
  nodefs.inodesFree: "0%%"
  imagefs.available: "0%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
registerNode: true
nodeStatusUpdateFrequency: 2s
clusterDNS: [%s]
clusterDomain: cluster.local
`, n.cgroupRoot, n.runtime.Sock, n.podLogs, n.IP, n.API.CAFile, clusterDNSIP)
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	n.kubelet = startAt(t, dir, "kubelet", n.at, filepath.Join(n.bins, "kubelet"),
		"--config="+cfg, "--kubeconfig="+n.API.kubeconfig(t, nodeTokenOf(n.Name)), "--root-dir="+filepath.Join(dir, "root"),
		"--cert-dir="+filepath.Join(dir, "pki"), "--hostname-override="+n.Name, "--node-ip="+n.IP.String(), "--v=2")
	t.Cleanup(n.dumpPodLogs)
}

// makeCgroupRoot makes the kubelet's cgroup root in every cgroup v1
// hierarchy: under this process's memory cgroup (so pods count against the
// test's memory, not beside it), and removes it (pods' processes killed,
// deepest directories first) when the test ends.
func (n *realNode) makeCgroupRoot() string {
	t := n.t
	base := "/"
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && parts[1] == "memory" {
				base = parts[2]
			}
		}
	}
	root := filepath.Join(base, fmt.Sprintf("sy-node-%d-%s", os.Getpid(), n.Name))
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	var made, leaves []string
	for _, h := range hierarchies {
		if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err != nil || filepath.Base(h) == "unified" {
			continue
		}
		// Remember each directory this makes, to remove exactly those.
		p := h
		for _, part := range strings.Split(strings.Trim(root, "/"), "/") {
			p = filepath.Join(p, part)
			if _, err := os.Stat(p); os.IsNotExist(err) {
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Fatalf("cgroup %s: %v", p, err)
				}
				made = append(made, p)
			}
		}
		leaves = append(leaves, filepath.Join(h, root))
	}
	t.Cleanup(func() { removeCgroups(t, leaves, made) })
	return root
}

// removeCgroups kills what still runs under the kubelet's cgroup root (the
// test's pods, once the kubelet and containerd are gone), removes the
// cgroups there, then the directories made for the root, deepest first.
func removeCgroups(t interface{ Logf(string, ...any) }, leaves, made []string) {
	var all []string
	for _, top := range leaves {
		filepath.Walk(top, func(path string, info os.FileInfo, err error) error {
			if err == nil && info.IsDir() {
				all = append(all, path)
			}
			return nil
		})
	}
	for _, d := range all {
		b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	all = append(all, made...)
	sort.Slice(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
	seen := map[string]bool{}
	for _, d := range all {
		if seen[d] {
			continue
		}
		seen[d] = true
		var err error
		for i := 0; i < 50; i++ {
			if err = os.Remove(d); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil && !os.IsNotExist(err) {
			t.Logf("removing cgroup %s: %v", d, err)
		}
	}
}

// kernelSettings are the machine-wide (not per namespace) settings the
// kubelet sets for itself at start: the test puts back what they were.
var kernelSettings = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

func restoreKernelSettings(t interface {
	Cleanup(func())
	Logf(string, ...any)
}) {
	was := map[string]string{}
	for _, k := range kernelSettings {
		if b, err := os.ReadFile("/proc/sys/" + k); err == nil {
			was[k] = strings.TrimSpace(string(b))
		}
	}
	t.Cleanup(func() {
		for k, v := range was {
			if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0o644); err != nil {
				t.Logf("restoring %s=%s: %v", k, v, err)
			}
		}
	})
}

// cleanLogLinks removes, when the test ends, the links the kubelet makes
// in /var/log/containers to this node's pod logs (and the directory, when
// the kubelet made it and it is empty).
func cleanLogLinks(t interface{ Cleanup(func()) }, podLogs string) {
	const dir = "/var/log/containers"
	_, err := os.Stat(dir)
	existed := err == nil
	t.Cleanup(func() {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, podLogs+"/") {
				os.Remove(p)
			}
		}
		if !existed {
			os.Remove(dir) // only if empty
		}
	})
}
