//go:build linux

package ovstest

import (
	"bytes"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/ovs/podport"
)

// Pod is a network namespace attached to its node's bridge by
// switchyard-cni.
type Pod struct {
	Name        string
	NS          string
	ContainerID string
	IPs         []netip.Addr
	MAC         net.HardwareAddr
	node        *Node
}

// NetNSPath is the pod's network namespace as CNI_NETNS names it.
func (p *Pod) NetNSPath() string { return "/var/run/netns/" + p.NS }

// CNIBinary builds switchyard-cni once per test binary and returns its
// path.
func CNIBinary(t testing.TB) string {
	t.Helper()
	return built(t, "github.com/switchyard-proxy/switchyard/cmd/switchyard-cni")
}

// NodeFile is where switchyard on this node writes its node file.
func (n *Node) NodeFile() string { return filepath.Join(n.Dir, "ovs-node.json") }

// CNIConfig is the node's network configuration for switchyard-cni.
func (n *Node) CNIConfig() []byte {
	b, _ := json.Marshal(map[string]any{
		"cniVersion": "1.0.0", "name": "switchyard", "type": "switchyard",
		"bridge": "br-sy", "ovsRunDir": n.OVS.Dir, "nodeFile": n.NodeFile(), "ipamDir": filepath.Join(n.Dir, "ipam"),
	})
	return b
}

// CNICall is one invocation of the plugin.
type CNICall struct {
	Binary      string // default: CNIBinary
	Command     string // ADD, DEL, CHECK, VERSION
	ContainerID string
	NetNS       string // CNI_NETNS
	IfName      string
	Args        string // CNI_ARGS
	Config      []byte // stdin
}

// RunCNI runs switchyard-cni in the node's host namespace as a container
// runtime does: the call in the environment, the configuration on stdin.
// It returns stdout (the result or the error JSON) and whether it exited
// 0.
func (n *Node) RunCNI(t testing.TB, call CNICall) ([]byte, error) {
	t.Helper()
	bin := call.Binary
	if bin == "" {
		bin = CNIBinary(t)
	}
	if call.IfName == "" {
		call.IfName = "eth0"
	}
	cmd := exec.Command("ip", "netns", "exec", n.NS, bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CNI_COMMAND=" + call.Command, "CNI_CONTAINERID=" + call.ContainerID,
		"CNI_NETNS=" + call.NetNS, "CNI_IFNAME=" + call.IfName, "CNI_ARGS=" + call.Args, "CNI_PATH=" + filepath.Dir(bin)}
	cmd.Stdin = bytes.NewReader(call.Config)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil && errOut.Len() > 0 {
		t.Logf("switchyard-cni %s stderr: %s", call.Command, errOut.String())
	}
	return out.Bytes(), err
}

// AddPod makes a pod namespace and attaches it with switchyard-cni ADD,
// asking for the given addresses (none: the allocator picks). The pod is
// detached (DEL) and removed when the test ends.
func (n *Node) AddPod(t testing.TB, name string, ips ...netip.Addr) *Pod {
	t.Helper()
	c := n.cluster
	p := &Pod{Name: name, NS: c.namespace(n.Name + "-" + name), ContainerID: c.Prefix + "-" + n.Name + "-" + name, node: n}
	var want []string
	for _, ip := range ips {
		want = append(want, ip.String())
	}
	args := "IgnoreUnknown=1;K8S_POD_NAMESPACE=conf;K8S_POD_NAME=" + name
	if len(want) > 0 {
		args += ";IP=" + strings.Join(want, ",")
	}
	out, err := n.RunCNI(t, CNICall{Command: "ADD", ContainerID: p.ContainerID, NetNS: p.NetNSPath(), Args: args, Config: n.CNIConfig()})
	if err != nil {
		t.Fatalf("switchyard-cni ADD %s on %s: %v\n%s", name, n.Name, err, out)
	}
	var res struct {
		Interfaces []struct {
			Mac     string `json:"mac"`
			Sandbox string `json:"sandbox"`
		} `json:"interfaces"`
		IPs []struct {
			Address string `json:"address"`
		} `json:"ips"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("switchyard-cni ADD result %q: %v", out, err)
	}
	for _, ip := range res.IPs {
		pfx, err := netip.ParsePrefix(ip.Address)
		if err != nil {
			t.Fatalf("ADD result address %q: %v", ip.Address, err)
		}
		p.IPs = append(p.IPs, pfx.Addr())
	}
	for _, i := range res.Interfaces {
		if i.Sandbox != "" {
			p.MAC, _ = net.ParseMAC(i.Mac)
		}
	}
	n.pods = append(n.pods, p)
	t.Cleanup(func() {
		n.RunCNI(t, CNICall{Command: "DEL", ContainerID: p.ContainerID, NetNS: p.NetNSPath(), Config: n.CNIConfig()})
	})
	return p
}

// HostVethNameOf is the bridge port of a pod (switchyard-cni's name for
// the host end of its veth).
func HostVethNameOf(p *Pod) string { return podport.HostVethName(p.ContainerID, "eth0") }
