//go:build linux

package cni_test

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/ovs/cni"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	"github.com/switchyard-proxy/switchyard/ovs/podport"
)

// A node whose pod CIDR holds five pods, with switchyard running on it
// (ADD waits for switchyard to program the pod's port).
func startNode(t *testing.T) *ovstest.Node {
	t.Helper()
	c := ovstest.NewCluster(t, false, ovstest.NodeSpec{Name: "node-1",
		IPs:      []netip.Addr{netip.MustParseAddr("192.168.100.10"), netip.MustParseAddr("fd00:100::10")},
		PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.1.0/29"), netip.MustParsePrefix("fd00:244:1::/64")}})
	n := c.Nodes[0]
	p := n.StartSwitchyard(t, "--file="+c.WriteClusterFile(t), "--min-sync-period=0")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(n.NodeFile()); err == nil {
			break
		}
		if time.Now().After(deadline) || p.Exited() {
			t.Fatal("switchyard did not write the node file")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return n
}

// cniError is the JSON error a failed call prints.
type cniError struct {
	Code    uint   `json:"code"`
	Msg     string `json:"msg"`
	Details string `json:"details"`
}

func failed(t *testing.T, out []byte, err error) cniError {
	t.Helper()
	if err == nil {
		t.Fatalf("the call succeeded: %s", out)
	}
	var e cniError
	if jerr := json.Unmarshal(out, &e); jerr != nil || e.Code == 0 || e.Msg == "" {
		t.Fatalf("no JSON error result (%v): %q", jerr, out)
	}
	return e
}

// noTrace checks that nothing of a container is left: no port on the
// bridge, no host veth, no address held for it.
func noTrace(t *testing.T, n *ovstest.Node, containerID string) {
	t.Helper()
	name := podport.HostVethName(containerID, "eth0")
	if out := n.OVS.Vsctl("--if-exists", "get", "interface", name, "name"); strings.TrimSpace(out) != "" {
		t.Errorf("port %s is still on the bridge", name)
	}
	if _, err := n.ExecHost("ip", "link", "show", name); err == nil {
		t.Errorf("veth %s is still on the host", name)
	}
	held := false
	filepath.Walk(filepath.Join(n.Dir, "ipam"), func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(path); strings.HasPrefix(string(b), containerID) {
				held = true
			}
		}
		return nil
	})
	if held {
		t.Errorf("an address is still held for %s", containerID)
	}
}

func TestAddCheckDelAndDelAgain(t *testing.T) {
	n := startNode(t)
	ns := n.Namespace(t, "pod-a")
	call := ovstest.CNICall{ContainerID: "ctr-a", NetNS: "/var/run/netns/" + ns, Config: n.CNIConfig(),
		Args: "IgnoreUnknown=1;K8S_POD_NAMESPACE=web;K8S_POD_NAME=a;IP=10.244.1.4"}

	call.Command = "ADD"
	out, err := n.RunCNI(t, call)
	if err != nil {
		t.Fatalf("ADD: %v\n%s", err, out)
	}
	var res struct {
		CNIVersion string `json:"cniVersion"`
		Interfaces []struct {
			Name, Mac, Sandbox string
		} `json:"interfaces"`
		IPs []struct {
			Address   string `json:"address"`
			Gateway   string `json:"gateway"`
			Interface *int   `json:"interface"`
		} `json:"ips"`
		Routes []struct {
			Dst string `json:"dst"`
			GW  string `json:"gw"`
		} `json:"routes"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("result %q: %v", out, err)
	}
	if res.CNIVersion != "1.0.0" || len(res.Interfaces) != 2 || res.Interfaces[1].Sandbox != call.NetNS || len(res.IPs) != 2 ||
		res.IPs[0].Address != "10.244.1.4/29" || res.IPs[0].Gateway != "10.244.1.1" ||
		!strings.HasPrefix(res.IPs[1].Address, "fd00:244:1::") || res.IPs[1].Gateway != "fd00:244:1::1" ||
		len(res.Routes) != 2 || res.Routes[0].Dst != "0.0.0.0/0" {
		t.Fatalf("ADD result: %s", out)
	}
	// The port carries what the driver reads and is programmed.
	hostName := podport.HostVethName("ctr-a", "eth0")
	id := func(key string) string {
		return strings.Trim(strings.TrimSpace(n.OVS.Vsctl("get", "interface", hostName, "external_ids:\""+key+"\"")), `"`)
	}
	ofport := strings.TrimSpace(n.OVS.Vsctl("get", "interface", hostName, "ofport"))
	if id(podport.KeyPodName) != "web/a" || !strings.HasPrefix(id(podport.KeyPodIPs), "10.244.1.4,fd00:244:1::") ||
		id(podport.KeyContainerID) != "ctr-a" || id(podport.KeyPodMAC) != res.Interfaces[1].Mac || id(podport.KeyProgrammed) != ofport {
		t.Errorf("external_ids: %s", n.OVS.Vsctl("get", "interface", hostName, "external_ids"))
	}
	// The pod reaches its gateway (the host) at once.
	ovstest.ServeTCP(t, n.NS, 9999, "host")
	if id, err := ovstest.ProbeTCP(ns, netip.Addr{}, netip.MustParseAddrPort("10.244.1.1:9999"), 2*time.Second); id != "host" {
		t.Fatalf("pod to its gateway: %q %v", id, err)
	}

	prev := strings.TrimSuffix(string(n.CNIConfig()), "}") + `,"prevResult":` + string(out) + "}"
	call.Command, call.Config = "CHECK", []byte(prev)
	if out, err := n.RunCNI(t, call); err != nil {
		t.Fatalf("CHECK of a healthy pod: %v\n%s", err, out)
	}
	// CHECK sees what went wrong behind the plugin's back.
	if out, err := n.ExecIn(ns, "ip", "addr", "del", "10.244.1.4/29", "dev", "eth0"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	out, err = n.RunCNI(t, call)
	if e := failed(t, out, err); !strings.Contains(e.Msg+e.Details, "addresses") {
		t.Fatalf("CHECK after an address went: %+v", e)
	}

	call.Command, call.Config = "DEL", n.CNIConfig()
	for i := 0; i < 2; i++ {
		if out, err := n.RunCNI(t, call); err != nil {
			t.Fatalf("DEL #%d: %v\n%s", i+1, err, out)
		}
		noTrace(t, n, "ctr-a")
	}
	// DEL once the pod's namespace is gone, of a container never added.
	call.ContainerID, call.NetNS = "ctr-never", "/var/run/netns/gone-"+ns
	if out, err := n.RunCNI(t, call); err != nil {
		t.Fatalf("DEL of an unknown container: %v\n%s", err, out)
	}

	call.Command = "VERSION"
	out, err = n.RunCNI(t, call)
	if err != nil || !strings.Contains(string(out), `"1.0.0"`) {
		t.Fatalf("VERSION: %v %s", err, out)
	}
}

// Allocations are files: they outlive switchyard and the plugin, and a
// pod that went gives its address back.
func TestAllocationsSurviveAndAreReturned(t *testing.T) {
	n := startNode(t)
	add := func(id string) (string, error) {
		ns := n.Namespace(t, id)
		out, err := n.RunCNI(t, ovstest.CNICall{Command: "ADD", ContainerID: id, NetNS: "/var/run/netns/" + ns, Config: n.CNIConfig()})
		if err != nil {
			return string(out), err
		}
		var res struct{ IPs []struct{ Address string } }
		json.Unmarshal(out, &res)
		return res.IPs[0].Address, nil
	}
	seen := map[string]bool{}
	for i := 0; i < 5; i++ { // .2 .. .6: the /29 less network, gateway and broadcast
		a, err := add("ctr-" + string(rune('a'+i)))
		if err != nil {
			t.Fatalf("ADD %d: %v %s", i, err, a)
		}
		if seen[a] {
			t.Fatalf("%s handed out twice", a)
		}
		seen[a] = true
	}
	// Exhausted: a clear error, and the IPv6 address taken first is
	// given back.
	out, err := add("ctr-full")
	e := failed(t, []byte(out), err)
	if e.Code != cni.ErrNoFreeAddress || !strings.Contains(e.Msg, "10.244.1.0/29") {
		t.Fatalf("exhausted range: %+v", e)
	}
	noTrace(t, n, "ctr-full")

	n.RunCNI(t, ovstest.CNICall{Command: "DEL", ContainerID: "ctr-c", Config: n.CNIConfig()})
	if a, err := add("ctr-again"); err != nil || !seen[a] {
		t.Fatalf("after a DEL the freed address is handed out again: %q %v", a, err)
	}
}

func TestBadCallsFailClearlyAndLeaveNothing(t *testing.T) {
	n := startNode(t)
	noCIDR := filepath.Join(n.Dir, "no-cidr.json")
	if err := podport.WriteNodeNetwork(noCIDR, podport.NodeNetwork{Node: "node-1", MTU: 1500}); err != nil {
		t.Fatal(err)
	}
	conf := func(change func(m map[string]any)) []byte {
		var m map[string]any
		json.Unmarshal(n.CNIConfig(), &m)
		change(m)
		b, _ := json.Marshal(m)
		return b
	}
	ns := n.Namespace(t, "victim")
	for _, tc := range []struct {
		name   string
		call   ovstest.CNICall
		code   uint
		saying string
	}{
		{"the node has no pod CIDR", ovstest.CNICall{Config: conf(func(m map[string]any) { m["nodeFile"] = noCIDR })}, 11, "no pod CIDR"},
		{"switchyard never wrote the node file", ovstest.CNICall{Config: conf(func(m map[string]any) { m["nodeFile"] = "/nonexistent/node.json" })}, 11, "is switchyard running"},
		{"the network namespace vanished", ovstest.CNICall{NetNS: "/var/run/netns/" + ns + "-gone"}, 8, "network namespace"},
		{"the bridge does not exist", ovstest.CNICall{Config: conf(func(m map[string]any) { m["bridge"] = "br-none" })}, 11, "bridge br-none does not exist"},
		{"OVS is down", ovstest.CNICall{Config: conf(func(m map[string]any) { m["ovsRunDir"] = t.TempDir() })}, 11, "Open vSwitch is not reachable"},
		{"a requested address outside the pod CIDRs", ovstest.CNICall{Args: "IP=10.9.9.9"}, cni.ErrAddressTaken, "10.9.9.9"},
		{"a requested address that is not one", ovstest.CNICall{Args: "IP=ten"}, 4, "requested IP"},
		{"a configuration that is not JSON", ovstest.CNICall{Config: []byte("{not json")}, 6, ""},
		{"a relative path", ovstest.CNICall{Config: conf(func(m map[string]any) { m["ipamDir"] = "var/lib" })}, 7, "absolute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := tc.call
			call.Command, call.ContainerID = "ADD", "ctr-bad"
			if call.NetNS == "" {
				call.NetNS = "/var/run/netns/" + ns
			}
			if call.Config == nil {
				call.Config = n.CNIConfig()
			}
			out, err := n.RunCNI(t, call)
			e := failed(t, out, err)
			if e.Code != tc.code || !strings.Contains(e.Msg+"; "+e.Details, tc.saying) {
				t.Fatalf("error %+v, want code %d saying %q", e, tc.code, tc.saying)
			}
			noTrace(t, n, "ctr-bad")
		})
	}
}
