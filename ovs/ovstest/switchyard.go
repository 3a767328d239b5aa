//go:build linux

package ovstest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/testobj"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Encap is the --ovs-encap of the cluster's nodes: Tunnel (default
// vxlan) for an overlay, none when routed.
func (c *Cluster) Encap() string {
	switch {
	case !c.Overlay:
		return "none"
	case c.Tunnel != "":
		return c.Tunnel
	}
	return "vxlan"
}

// DriverFlags are the --ovs-* flags that point switchyard at this node.
func (n *Node) DriverFlags() []string {
	return []string{"--ovs-bridge=br-sy", "--ovs-rundir=" + n.OVS.Dir, "--ovs-datapath-type=netdev",
		"--ovs-encap=" + n.cluster.Encap(), "--ovs-node-file=" + n.NodeFile(), "--ovs-ipam-dir=" + filepath.Join(n.Dir, "ipam"),
		"--ovs-cni-conf-dir=" + filepath.Join(n.Dir, "net.d"), "--ovs-cni-bin-dir=" + filepath.Join(n.Dir, "bin")}
}

// NodeObjects are the cluster's Node objects (addresses, pod CIDRs).
func (c *Cluster) NodeObjects() []*v1.Node {
	var out []*v1.Node
	for _, n := range c.Nodes {
		var ips, cidrs []string
		for _, ip := range n.IPs {
			ips = append(ips, ip.String())
		}
		for _, p := range n.PodCIDRs {
			cidrs = append(cidrs, p.String())
		}
		out = append(out, testobj.WithPodCIDRs(testobj.Node(n.Name, "", ips...), cidrs...))
	}
	return out
}

// WriteObjects writes Kubernetes objects as one YAML file (a file source
// for switchyard), atomically.
func WriteObjects(path string, objs ...any) error {
	var b bytes.Buffer
	for _, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// SwitchyardBinary builds switchyard once per test binary.
func SwitchyardBinary(t testing.TB) string {
	t.Helper()
	return built(t, "github.com/switchyard-proxy/switchyard/cmd/switchyard")
}

var (
	buildMu sync.Mutex
	builds  = map[string]string{} // package -> binary
)

// built builds a command of this module once per test binary and returns
// the binary's path.
func built(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := builds[pkg]; ok {
		return bin
	}
	dir := binDir(t)
	bin := filepath.Join(dir, filepath.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	builds[pkg] = bin
	return bin
}

// binDir is this test process's directory for built binaries
// (sy-bin-PID in the temp directory); those of test processes that are gone
// are removed first.
func binDir(t testing.TB) string {
	t.Helper()
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), "sy-bin-*"))
	for _, d := range old {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "sy-bin-"))
		if err == nil && pid != os.Getpid() && syscall.Kill(pid, 0) != nil {
			os.RemoveAll(d)
		}
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("sy-bin-%d", os.Getpid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Process is switchyard running on a node (in its host namespace).
type Process struct {
	node *Node
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// HealthPort is where a node's switchyard serves /healthz (on the node's
// own loopback).
const HealthPort = 10256

// StartSwitchyard runs `switchyard run --dataplane ovs` on the node with
// the given extra arguments; it is stopped by PID when the test ends (its
// log tail is printed if the test failed).
func (n *Node) StartSwitchyard(t testing.TB, args ...string) *Process {
	t.Helper()
	bin := SwitchyardBinary(t)
	logPath := filepath.Join(n.Dir, fmt.Sprintf("switchyard-%d.log", time.Now().UnixNano()))
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	full := append([]string{"netns", "exec", n.NS, bin, "run", "--dataplane=ovs", "--node-name=" + n.Name,
		fmt.Sprintf("--healthz-bind-address=127.0.0.1:%d", HealthPort), fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", MetricsPort)}, n.DriverFlags()...)
	cmd := exec.Command("ip", append(full, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatal(err)
	}
	p := &Process{node: n, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { cmd.Wait(); f.Close(); close(p.done) }()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("last lines of %s's switchyard log:\n%s", n.Name, tailFile(logPath, 30))
		}
	})
	return p
}

// PID is the process's PID (ip netns exec execs switchyard in place).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop ends the process: SIGTERM, then SIGKILL after 10 s.
func (p *Process) Stop() {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(p.PID(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(p.PID(), syscall.SIGKILL)
		<-p.done
	}
}

// Kill ends the process with SIGKILL (a crash) and waits for it.
func (p *Process) Kill() {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(p.PID(), syscall.SIGKILL)
	<-p.done
}

// Health is the process's /healthz answer.
type Health struct {
	Code        int
	LastUpdated time.Time  `json:"lastUpdated"`
	QueuedSince *time.Time `json:"queuedSince"`
	LastError   string     `json:"lastError"`
}

// Health asks the process's /healthz (inside the node's namespace).
func (p *Process) Health() (Health, error) {
	var h Health
	c := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, DialContext: DialerIn(p.node.NS)}}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", HealthPort))
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	h.Code = resp.StatusCode
	return h, json.Unmarshal(b, &h)
}

// WaitSynced waits until the process has applied a change made at the
// moment since: ready (a sign of the change in the dataplane) holds, then
// its last update is later than since and nothing is queued.
func (p *Process) WaitSynced(since time.Time, ready func() bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if p.Exited() {
			return fmt.Errorf("switchyard on %s exited:\n%s", p.node.Name, tailFile(p.log, 20))
		}
		var h Health
		var err error
		if ready() {
			if h, err = p.Health(); err == nil && h.QueuedSince == nil && h.LastUpdated.After(since) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("switchyard on %s not synced within %v (health %+v, %v)", p.node.Name, timeout, h, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tailFile(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// HasRoute reports whether the node's host has a route of switchyard's
// to exactly dst (what a commit installs last).
func (n *Node) HasRoute(dst netip.Prefix) bool {
	fam := "-4"
	if dst.Addr().Is6() {
		fam = "-6"
	}
	out, err := n.cluster.Exec(n.NS, "ip", fam, "route", "show", "exact", dst.String(), "proto", "83")
	return err == nil && strings.TrimSpace(out) != ""
}

// Switchyard runs a one-shot switchyard command (install, cleanup) on the
// node with its driver flags and returns its output.
func (n *Node) Switchyard(t testing.TB, args ...string) (string, error) {
	t.Helper()
	full := append([]string{"netns", "exec", n.NS, SwitchyardBinary(t)}, args...)
	full = append(full, "--dataplane=ovs", "--node-name="+n.Name)
	out, err := exec.Command("ip", append(full, n.DriverFlags()...)...).CombinedOutput()
	return string(out), err
}

// MetricsPort is where a node's switchyard serves /metrics (on the node's
// own loopback).
const MetricsPort = 10249

// Metrics reads the process's /metrics (inside the node's namespace).
func (p *Process) Metrics() (string, error) {
	b, err := p.Fetch(MetricsPort, "/metrics")
	return string(b), err
}

// Fetch gets a path from one of the process's servers on the node's
// loopback.
func (p *Process) Fetch(port int, path string) ([]byte, error) {
	c := http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true, DialContext: DialerIn(p.node.NS)}}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: %s", path, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// WriteClusterFile writes the cluster's Nodes and objs as the cluster file
// switchyard processes read (--file), and returns its path.
func (c *Cluster) WriteClusterFile(t testing.TB, objs ...any) string {
	t.Helper()
	var all []any
	for _, n := range c.NodeObjects() {
		all = append(all, n)
	}
	path := filepath.Join(c.Dir, "cluster.yaml")
	if err := WriteObjects(path, append(all, objs...)...); err != nil {
		t.Fatal(err)
	}
	return path
}

// LogTail is the last n lines of the process's log.
func (p *Process) LogTail(n int) string { return tailFile(p.log, n) }

// LogPath is the file the process's output goes to.
func (p *Process) LogPath() string { return p.log }
