//go:build linux

// Package ovstest runs a private Open vSwitch for tests: its own run, db
// and log directories and its own network namespace (the userspace
// datapath allows one ovs-vswitchd per namespace), so tests never touch a
// system OVS. Everything it starts it stops by PID, also when a test fails.
package ovstest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// OVS is one private ovsdb-server + ovs-vswitchd.
type OVS struct {
	Dir    string // run, db and log directory
	NS     string // network namespace the daemons (and bridge ports) live in
	DBSock string // unix socket path of ovsdb-server

	t       testing.TB
	dbPID   int
	vsPID   int
	ownedNS bool // Start made NS and removes it
}

var seq atomic.Int32

// Binaries the harness needs; make test installs them (hack/ensure-ovs.sh).
var binaries = []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl", "ovs-appctl", "ip", "ethtool", "nft"}

// Available reports why OVS tests cannot run here ("" if they can).
func Available() string {
	if os.Geteuid() != 0 {
		return "needs root for network namespaces"
	}
	for _, b := range binaries {
		if _, err := exec.LookPath(b); err != nil {
			return b + " not found: install openvswitch-switch, iproute2, ethtool and nftables (hack/ensure-ovs.sh does)"
		}
	}
	return ""
}

// Require skips the test when not run as root: it cannot make network
// namespaces or start OVS's daemons, and tests of the same code that need
// neither run instead (on an in-memory bridge, ofconntest.Bridge). As root,
// a missing OVS is a failure, not a skip: make test (which runs as root)
// installs it, and a skipped test must not pass for a tested one.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: needs root (network namespaces and a private ovs-vswitchd); make test runs it as root")
	}
	if why := Available(); why != "" {
		t.Fatalf("OVS integration test cannot run: %s", why)
	}
}

// Start launches a private OVS in a namespace of its own and registers
// its cleanup (the namespace goes with it).
func Start(t testing.TB) *OVS {
	t.Helper()
	Require(t)
	ns := fmt.Sprintf("sy-t%d-%d", os.Getpid(), seq.Add(1))
	if out, err := run(nil, "ip", "netns", "add", ns); err != nil {
		t.Fatalf("ip netns add %s: %v\n%s", ns, err, out)
	}
	o := startIn(t, ns)
	o.ownedNS = true
	o.must("ip", "netns", "exec", o.NS, "ip", "link", "set", "lo", "up")
	o.must("ip", "netns", "exec", o.NS, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
	return o
}

// StartIn launches a private OVS in an existing namespace (a node's host)
// and registers its cleanup; the namespace stays.
func StartIn(t testing.TB, ns string) *OVS {
	t.Helper()
	Require(t)
	return startIn(t, ns)
}

// vswitchSchema is the schema of the ovsdb-tool found first on PATH:
// share/openvswitch beside its bin directory (/usr/share for /usr/bin;
// another build's own, hack/ensure-ovs-next.sh).
func vswitchSchema() string {
	tool, err := exec.LookPath("ovsdb-tool")
	if err != nil {
		return "/usr/share/openvswitch/vswitch.ovsschema"
	}
	return filepath.Join(filepath.Dir(tool), "..", "share", "openvswitch", "vswitch.ovsschema")
}

func startIn(t testing.TB, ns string) *OVS {
	t.Helper()
	dir, err := os.MkdirTemp("", "sy-ovs-")
	if err != nil {
		t.Fatal(err)
	}
	o := &OVS{Dir: dir, NS: ns, DBSock: filepath.Join(dir, "db.sock"), t: t}
	t.Cleanup(o.stop)
	o.must("ovsdb-tool", "create", filepath.Join(dir, "conf.db"), vswitchSchema())
	o.startDB()
	o.Vsctl("--no-wait", "init")
	o.StartVswitchd()
	return o
}

func (o *OVS) env() []string {
	return append(os.Environ(), "OVS_RUNDIR="+o.Dir, "OVS_DBDIR="+o.Dir, "OVS_LOGDIR="+o.Dir, "OVS_SYSCONFDIR="+o.Dir)
}

// run runs a command with the OVS environment and returns its output.
func (o *OVS) run(name string, args ...string) (string, error) { return run(o.env(), name, args...) }

// run runs a command (with env, when not nil) and returns its output.
func run(env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (o *OVS) must(name string, args ...string) string {
	o.t.Helper()
	out, err := o.run(name, args...)
	if err != nil {
		o.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func (o *OVS) startDB() {
	o.must("ip", "netns", "exec", o.NS, "ovsdb-server", filepath.Join(o.Dir, "conf.db"),
		"--remote=punix:"+o.DBSock, "--pidfile="+filepath.Join(o.Dir, "ovsdb-server.pid"),
		"--log-file="+filepath.Join(o.Dir, "ovsdb-server.log"), "--detach", "--no-chdir")
	o.dbPID = o.readPID("ovsdb-server.pid")
}

// StartVswitchd (re)starts ovs-vswitchd, waiting until it answers.
func (o *OVS) StartVswitchd() {
	o.t.Helper()
	o.must("ip", "netns", "exec", o.NS, "ovs-vswitchd", "unix:"+o.DBSock,
		"--pidfile="+filepath.Join(o.Dir, "ovs-vswitchd.pid"),
		"--log-file="+filepath.Join(o.Dir, "ovs-vswitchd.log"), "--detach", "--no-chdir")
	o.vsPID = o.readPID("ovs-vswitchd.pid")
	o.Appctl("version")
}

// KillVswitchd stops ovs-vswitchd by PID (flows and groups are lost).
func (o *OVS) KillVswitchd() {
	kill(o.vsPID)
	o.vsPID = 0
}

// RestartDB stops and restarts ovsdb-server (the database file stays).
func (o *OVS) RestartDB() {
	o.t.Helper()
	kill(o.dbPID)
	o.startDB()
}

func (o *OVS) readPID(file string) int {
	o.t.Helper()
	for range 100 {
		b, err := os.ReadFile(filepath.Join(o.Dir, file))
		if err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	o.t.Fatalf("no pid in %s", file)
	return 0
}

// kill stops a process by PID: SIGTERM, then SIGKILL after 3 s.
func kill(pid int) {
	if pid <= 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for range 150 {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

func (o *OVS) stop() {
	kill(o.vsPID)
	kill(o.dbPID)
	if o.ownedNS {
		_, _ = o.run("ip", "netns", "del", o.NS)
	}
	if o.t.Failed() {
		for _, f := range []string{"ovs-vswitchd.log", "ovsdb-server.log"} {
			if b, err := os.ReadFile(filepath.Join(o.Dir, f)); err == nil {
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				if len(lines) > 40 {
					lines = lines[len(lines)-40:]
				}
				o.t.Logf("last lines of %s:\n%s", f, strings.Join(lines, "\n"))
			}
		}
	}
	_ = os.RemoveAll(o.Dir)
}

// Vsctl runs ovs-vsctl against this OVS.
func (o *OVS) Vsctl(args ...string) string {
	o.t.Helper()
	return o.must("ovs-vsctl", append([]string{"--db=unix:" + o.DBSock, "--timeout=10"}, args...)...)
}

// Appctl runs ovs-appctl against this ovs-vswitchd.
func (o *OVS) Appctl(args ...string) string {
	o.t.Helper()
	var out string
	var err error
	for range 50 { // the control socket appears shortly after the pid file
		if out, err = o.AppctlErr(args...); err == nil {
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
	o.t.Fatalf("ovs-appctl %v: %v\n%s", args, err, out)
	return ""
}

// Version is this ovs-vswitchd's version, as it answers ovs-appctl
// version ("ovs-vswitchd (Open vSwitch) 3.1.0": the last word).
func (o *OVS) Version() string {
	o.t.Helper()
	words := strings.Fields(o.Appctl("version"))
	if len(words) == 0 {
		o.t.Fatal("ovs-appctl version printed nothing")
	}
	return words[len(words)-1]
}

// AppctlErr is one try of Appctl, returning the error instead of failing.
func (o *OVS) AppctlErr(args ...string) (string, error) {
	ctl := filepath.Join(o.Dir, fmt.Sprintf("ovs-vswitchd.%d.ctl", o.vsPID))
	return o.run("ovs-appctl", append([]string{"-t", ctl}, args...)...)
}

// Ofctl runs ovs-ofctl (OpenFlow 1.5) on a bridge's management socket.
func (o *OVS) Ofctl(args ...string) string {
	o.t.Helper()
	out, err := o.OfctlErr(args...)
	if err != nil {
		o.t.Fatalf("ovs-ofctl %v: %v\n%s", args, err, out)
	}
	return out
}

// OfctlErr is Ofctl returning the error instead of failing.
func (o *OVS) OfctlErr(args ...string) (string, error) {
	cmd, bridge := args[0], args[1]
	full := append([]string{"-O", "OpenFlow15", cmd, o.MgmtSocket(bridge)}, args[2:]...)
	return o.run("ovs-ofctl", full...)
}

// MgmtSocket is the OpenFlow management socket of a bridge.
func (o *OVS) MgmtSocket(bridge string) string { return filepath.Join(o.Dir, bridge+".mgmt") }

// AddBridge creates a userspace (netdev) bridge speaking OpenFlow 1.5.
func (o *OVS) AddBridge(name string) {
	o.t.Helper()
	o.Vsctl("add-br", name, "--", "set", "bridge", name, "datapath_type=netdev",
		"protocols=OpenFlow13,OpenFlow15", "fail_mode=secure")
}

// OFPort returns an interface's OpenFlow port number.
func (o *OVS) OFPort(iface string) string {
	return strings.TrimSpace(o.Vsctl("get", "interface", iface, "ofport"))
}

// VswitchdCPU is the CPU time ovs-vswitchd has used so far (user and
// system, from /proc), for telling its share of a sync from ours.
func (o *OVS) VswitchdCPU() (time.Duration, error) { return ProcessCPU(o.vsPID) }

// ProcessCPU is the CPU time a process has used so far (user and system).
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may hold spaces) start at ")".
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad times", pid)
	}
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks, nil
}
