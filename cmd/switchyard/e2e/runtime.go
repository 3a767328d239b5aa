//go:build linux

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// containerRuntime is a private containerd (Debian's 1.6 with its CRI
// plugin, runc) in the node's namespace: its own root, state, socket and
// CNI directories. Stopping it also stops every container it started,
// removes the pods' network namespaces it made, and unmounts what it
// mounted.
type containerRuntime struct {
	t    testing.TB
	at   place
	dir  string
	Sock string
	proc *process
}

// The sandbox ("pause") image containerd's CRI plugin runs for every pod:
// written by the test, never pulled.
const pauseImage = "switchyard.local/pause:e2e"

func startContainerRuntime(t testing.TB, at place, dir, cniBin, cniConf string) *containerRuntime {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &containerRuntime{t: t, at: at, dir: dir, Sock: filepath.Join(dir, "containerd.sock")}
	// restrict_oom_score_adj: root on these machines lacks
	// CAP_SYS_RESOURCE, so the kubelet's -998 for pod sandboxes cannot be
	// written; containerd then clamps every container's score to its own
	// (0). A property of this machine, not of switchyard.
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
oom_score = 0
[grpc]
  address = %q
[ttrpc]
  address = %q
[plugins."io.containerd.internal.v1.opt"]
  path = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), r.Sock, r.Sock+".ttrpc", filepath.Join(dir, "opt"),
		pauseImage, cniBin, cniConf)
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	// containerd's CRI plugin sets a pod up with the loopback plugin
	// before the pod network's: Debian's, copied into the node's CNI
	// directory (as a CNI installation puts it into /opt/cni/bin).
	if err := copyFile("/usr/lib/cni/loopback", filepath.Join(cniBin, "loopback"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.proc = startAt(t, dir, "containerd", at, "containerd", "--config="+cfg)
	t.Cleanup(r.stop)
	if err := waitFor(30*time.Second, func() error {
		if r.proc.exited() {
			return fmt.Errorf("containerd exited")
		}
		_, err := r.ctr("version")
		return err
	}); err != nil {
		t.Fatalf("containerd did not come up: %v", err)
	}
	return r
}

// ctr runs containerd's client against this containerd, in the
// namespace the CRI plugin uses.
func (r *containerRuntime) ctr(args ...string) (string, error) {
	out, err := exec.Command("ctr", append([]string{"--address", r.Sock, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// importImages imports a docker-archive tarball (as `docker save` writes).
func (r *containerRuntime) importImages(tarball string) {
	r.t.Helper()
	if _, err := r.ctr("images", "import", tarball); err != nil {
		r.t.Fatal(err)
	}
}

// stop removes every container and task, stops containerd and its shims,
// and removes the pods' network namespaces it made.
func (r *containerRuntime) stop() {
	ids, _ := r.ctr("containers", "ls", "-q")
	var netns []string
	for _, id := range strings.Fields(ids) {
		info, err := r.ctr("containers", "info", id)
		if err == nil {
			netns = append(netns, networkNamespaceOf(info)...)
		}
		r.ctr("tasks", "kill", "--signal", "SIGKILL", id)
	}
	for _, id := range strings.Fields(ids) {
		for i := 0; i < 20; i++ {
			if _, err := r.ctr("tasks", "delete", "--force", id); err == nil || strings.Contains(err.Error(), "not found") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		r.ctr("containers", "delete", id)
	}
	r.proc.stop()
	killShimsOf(r.Sock)
	for _, p := range netns {
		unix.Unmount(p, unix.MNT_DETACH)
		os.Remove(p)
	}
}

// networkNamespaceOf reads the network namespace path out of `ctr
// containers info` (a pod sandbox's, made by the CRI plugin).
func networkNamespaceOf(info string) []string {
	var c struct {
		Spec struct {
			Linux struct {
				Namespaces []struct{ Type, Path string }
			}
		}
	}
	if json.Unmarshal([]byte(info), &c) != nil {
		return nil
	}
	var out []string
	for _, ns := range c.Spec.Linux.Namespaces {
		if ns.Type == "network" && strings.HasPrefix(ns.Path, "/var/run/netns/cni-") {
			out = append(out, ns.Path)
		}
	}
	return out
}

// killShimsOf kills the containerd shims serving this containerd (their
// command line names its socket) that outlived it.
func killShimsOf(sock string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) == 0 || !strings.Contains(args[0], "containerd-shim") {
			continue
		}
		for i, a := range args {
			if a == "-address" && i+1 < len(args) && args[i+1] == sock {
				if pid, err := strconv.Atoi(strings.Split(p, "/")[2]); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	}
}

// removeTree unmounts everything mounted under dir (deepest first) and
// removes it.
func removeTree(t testing.TB, dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err == nil {
		var mounts []string
		s := bufio.NewScanner(f)
		for s.Scan() {
			fields := strings.Fields(s.Text())
			if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
				mounts = append(mounts, fields[4])
			}
		}
		f.Close()
		sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
		for _, m := range mounts {
			if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
				t.Logf("unmount %s: %v", m, err)
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Logf("removing %s: %v", dir, err)
	}
}

func copyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode)
}
