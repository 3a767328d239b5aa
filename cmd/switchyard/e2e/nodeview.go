//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Several kubelet nodes on one machine need their own /opt/cni/bin,
// /etc/cni/net.d, OVS run directory and state directory, while the
// chart's hostPath values are the same on every node. As each kind node
// is a container with its own file system, each node here has its own
// mount namespace: its containerd and kubelet (and so its pods' hostPath
// volumes) see the node's directory at one path common to all nodes, its
// view; the test sees each node's directory where it is. Each node also
// has its own UTS namespace whose host name is the node's name: a
// hostNetwork pod answers with os.Hostname(), and upstream's specs expect
// the node's name from it, as they get on any real node.

// nodeView makes the node's mount and UTS namespaces (held by a process
// stopped by PID when the test ends) with the node's directory bound at
// view, its OVS run directory at view/ovs-run and hostname as its host
// name, and returns where its daemons run.
func nodeView(t testing.TB, dir, view, ovsDir, netNS, hostname string) place {
	t.Helper()
	for _, d := range []string{view, filepath.Join(dir, "ovs-run")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.Remove(view) }) // only if empty: the mounts die with the namespace
	holder := start(t, dir, "mount-namespace", "unshare", "--mount", "--uts", "--propagation", "private", "sleep", "infinity")
	pid := holder.cmd.Process.Pid
	self, _ := os.Readlink("/proc/self/ns/mnt")
	if err := waitFor(10*time.Second, func() error {
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err != nil || ns == self {
			return fmt.Errorf("no mount namespace of its own yet (%v)", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	at := place{netNS: netNS, viewPID: pid}
	if out, err := runAt(at, "hostname", hostname); err != nil {
		t.Fatalf("hostname %s in the node's UTS namespace: %v\n%s", hostname, err, out)
	}
	for _, b := range [][2]string{{dir, view}, {ovsDir, filepath.Join(view, "ovs-run")}} {
		if out, err := runAt(at, "mount", "--bind", b[0], b[1]); err != nil {
			t.Fatalf("mount --bind %s %s in the node's mount namespace: %v\n%s", b[0], b[1], err, out)
		}
	}
	return at
}

// runAt runs a command in the place and returns its combined output.
func runAt(at place, name string, args ...string) (string, error) {
	out, err := exec.Command("nsenter", append(append(at.nsenter(), "--", name), args...)...).CombinedOutput()
	return string(out), err
}

// inView is where the node's daemons see path, a path under the node's
// directory dir, whose view is view.
func inView(dir, view, path string) string {
	rel, err := filepath.Rel(dir, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		panic(fmt.Sprintf("%s is not under the node's directory %s", path, dir))
	}
	return filepath.Join(view, rel)
}
