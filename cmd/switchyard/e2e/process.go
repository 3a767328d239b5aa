//go:build linux

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// process is a daemon a test started; it is stopped by PID when the test
// ends, and its log tail is printed if the test failed.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func start(t testing.TB, dir, name, bin string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// No Pdeathsig: it fires when the starting OS thread exits, which Go
	// may do at any time; the cleanup below stops the process by PID.
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { cmd.Wait(); f.Close(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", logPath, tail(logPath, 25))
		}
	})
	return p
}

// startIn starts a daemon inside a network namespace (this process's when
// ns is empty). nsenter, not `ip netns exec`: that one also remounts /sys,
// which hides the cgroup v1 mounts a kubelet and containerd need. nsenter
// execs the daemon, so the PID stopped is the daemon's.
func startIn(t testing.TB, dir, name, ns, bin string, args ...string) *process {
	t.Helper()
	if ns == "" {
		return start(t, dir, name, bin, args...)
	}
	return startAt(t, dir, name, place{netNS: ns}, bin, args...)
}

// place is where a node's daemons run: its network namespace and, when
// viewPID is set, the mount and UTS namespaces of that process (the
// node's own view of the file system and its own host name, as a kind
// node's container has).
type place struct {
	netNS   string
	viewPID int
}

// nsenter is nsenter's arguments that enter the place.
func (p place) nsenter() []string {
	args := []string{"--net=" + netnsPath(p.netNS)}
	if p.viewPID != 0 {
		args = append(args, fmt.Sprintf("--mount=/proc/%d/ns/mnt", p.viewPID), fmt.Sprintf("--uts=/proc/%d/ns/uts", p.viewPID))
	}
	return args
}

// startAt starts a daemon in the place (see startIn).
func startAt(t testing.TB, dir, name string, at place, bin string, args ...string) *process {
	t.Helper()
	return start(t, dir, name, "nsenter", append(append(at.nsenter(), "--", bin), args...)...)
}

// netnsPath is where `ip netns` pins a named namespace.
func netnsPath(ns string) string { return "/var/run/netns/" + ns }

// dialerIn dials inside a network namespace (this process's when empty).
func dialerIn(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if ns == "" {
		var d net.Dialer
		return d.DialContext
	}
	return ovstest.DialerIn(ns)
}

// stop ends the process by its PID: SIGTERM, then SIGKILL after 10 s.
func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.ReplaceAll(string(bytes.Join(lines, []byte("\n"))), "\n", "\n  ")
}

// freePort returns a TCP port free on loopback right now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitFor polls until f succeeds or the timeout passes.
func waitFor(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
