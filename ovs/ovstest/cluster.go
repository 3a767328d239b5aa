//go:build linux

package ovstest

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// A Cluster is a test world made of network namespaces only: a fabric (a
// router with the nodes' underlay switch and the outside network), nodes
// (each a namespace that is the node's host, with its own private OVS),
// and an external client. Everything is removed by name when the test
// ends, also when it fails.
//
//	client 198.51.100.5 ── fabric (router) ── underlay 192.168.100.0/24 ── node-1 .10, node-2 .11, ...
//	        2001:db8:51::5                              fd00:100::/64
//
// The fabric routes no pod CIDR: pods reach the client only masqueraded,
// and nodes reach each other's pods by host routes (routed) or through
// their tunnel (overlay).
type Cluster struct {
	t       testing.TB
	Prefix  string // of every namespace and interface name
	Fabric  string // the router's namespace
	Client  string // the external client's namespace
	Overlay bool
	// Tunnel is the overlay's encapsulation (vxlan when empty).
	Tunnel string
	Nodes  []*Node
	Dir    string // the cluster's files (each node has a directory in it)
	spaces []string
}

// NodeSpec is one node to build.
type NodeSpec struct {
	Name     string
	IPs      []netip.Addr   // on the underlay, at most one per family
	PodCIDRs []netip.Prefix // at most one per family
}

// Node is a node of the cluster: its host namespace is its OVS's.
type Node struct {
	NodeSpec
	OVS *OVS
	NS  string
	// Underlay is the interface holding the node's IPs: eth0, or in
	// overlay mode an OVS bridge holding eth0 (the userspace datapath
	// sends tunnel traffic only through a bridge that holds the local
	// tunnel address).
	Underlay string
	// Dir holds the node's switchyard files (node file, allocations).
	Dir     string
	cluster *Cluster
	pods    []*Pod
}

// The underlay and the outside.
var (
	Router4       = netip.MustParseAddr("192.168.100.1")
	Router6       = netip.MustParseAddr("fd00:100::1")
	ClientIP4     = netip.MustParseAddr("198.51.100.5")
	ClientIP6     = netip.MustParseAddr("2001:db8:51::5")
	clientRouter4 = netip.MustParseAddr("198.51.100.1")
	clientRouter6 = netip.MustParseAddr("2001:db8:51::1")
)

// UnderlayBridge is the OVS bridge holding a node's underlay in overlay
// mode.
const UnderlayBridge = "br-underlay"

var clusterSeq atomic.Int32

// NewCluster builds the fabric, the client and the nodes. Nodes get no
// pods and no switchyard: the test starts switchyard, then adds pods.
func NewCluster(t testing.TB, overlay bool, nodes ...NodeSpec) *Cluster {
	t.Helper()
	Require(t)
	dir, err := os.MkdirTemp("", "sy-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, Prefix: fmt.Sprintf("sy%dc%d", os.Getpid()%100000, clusterSeq.Add(1)), Overlay: overlay, Dir: dir}
	t.Cleanup(c.remove)
	c.Fabric = c.namespace("fab")
	c.Client = c.namespace("cli")
	f := c.Fabric
	c.sh(f, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	c.sh(f, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
	c.sh(f, "ip", "link", "add", "br0", "type", "bridge")
	c.sh(f, "ip", "link", "set", "br0", "up")
	c.sh(f, "ip", "addr", "add", Router4.String()+"/24", "dev", "br0")
	c.sh(f, "ip", "-6", "addr", "add", Router6.String()+"/64", "dev", "br0", "nodad")

	c.veth(f, "cl", c.Client, "eth0")
	c.sh(f, "ip", "addr", "add", clientRouter4.String()+"/24", "dev", "cl")
	c.sh(f, "ip", "-6", "addr", "add", clientRouter6.String()+"/64", "dev", "cl", "nodad")
	c.sh(c.Client, "ip", "addr", "add", ClientIP4.String()+"/24", "dev", "eth0")
	c.sh(c.Client, "ip", "-6", "addr", "add", ClientIP6.String()+"/64", "dev", "eth0", "nodad")
	c.sh(c.Client, "ip", "route", "add", "default", "via", clientRouter4.String())
	c.sh(c.Client, "ip", "-6", "route", "add", "default", "via", clientRouter6.String())

	for i, spec := range nodes {
		c.Nodes = append(c.Nodes, c.addNode(i, spec))
	}
	return c
}

func (c *Cluster) addNode(i int, spec NodeSpec) *Node {
	c.t.Helper()
	o := StartIn(c.t, c.namespace(fmt.Sprintf("n%d", i+1)))
	n := &Node{NodeSpec: spec, OVS: o, NS: o.NS, Underlay: "eth0", Dir: filepath.Join(c.Dir, spec.Name), cluster: c}
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	port := fmt.Sprintf("n%d", i+1)
	c.veth(c.Fabric, port, n.NS, "eth0")
	c.sh(c.Fabric, "ip", "link", "set", port, "master", "br0")
	if c.Overlay {
		// The userspace datapath tunnels only through a bridge holding the
		// local tunnel address: the node's interface becomes a port of
		// one, as with OVS-DPDK. The bridge reads eth0 as a raw socket, so
		// the host's own stack must keep off it (no ARP, no IPv6, nothing
		// it receives there), or it would answer and route a second copy of
		// every packet.
		o.Vsctl("add-br", UnderlayBridge, "--", "set", "bridge", UnderlayBridge, "datapath_type=netdev")
		o.Vsctl("add-port", UnderlayBridge, "eth0")
		n.Underlay = UnderlayBridge
		c.sh(n.NS, "ip", "link", "set", "eth0", "arp", "off")
		c.sh(n.NS, "sysctl", "-qw", "net.ipv6.conf.eth0.disable_ipv6=1")
		c.sh(n.NS, "nft", "add table inet ovstest; add chain inet ovstest underlay { type filter hook prerouting priority raw; }; add rule inet ovstest underlay iifname eth0 drop")
		c.sh(n.NS, "ip", "link", "set", UnderlayBridge, "up")
	}
	for _, ip := range spec.IPs {
		if ip.Is4() {
			c.sh(n.NS, "ip", "addr", "add", ip.String()+"/24", "dev", n.Underlay)
		} else {
			c.sh(n.NS, "ip", "-6", "addr", "add", ip.String()+"/64", "dev", n.Underlay, "nodad")
		}
	}
	c.sh(n.NS, "ip", "route", "add", "default", "via", Router4.String())
	if _, ok := n.ip(false); ok {
		c.sh(n.NS, "ip", "-6", "route", "add", "default", "via", Router6.String())
	}
	return n
}

// namespace makes a namespace of the cluster (removed with it), with
// loopback up and IPv6 duplicate address detection off.
func (c *Cluster) namespace(suffix string) string {
	c.t.Helper()
	ns := c.Prefix + suffix
	c.must("ip", "netns", "add", ns)
	c.spaces = append(c.spaces, ns)
	c.sh(ns, "ip", "link", "set", "lo", "up")
	c.sh(ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
	return ns
}

// veth links two namespaces, with TX checksum offload off on both ends
// (the userspace datapath reads veths as raw sockets).
func (c *Cluster) veth(ns1, if1, ns2, if2 string) {
	c.t.Helper()
	c.sh(ns1, "ip", "link", "add", if1, "type", "veth", "peer", "name", if2, "netns", ns2)
	for _, e := range [][2]string{{ns1, if1}, {ns2, if2}} {
		c.sh(e[0], "ethtool", "-K", e[1], "tx", "off")
		c.sh(e[0], "ip", "link", "set", e[1], "up")
	}
}

// RouteToNode makes the fabric route a prefix to a node (addresses the
// node serves: external and load-balancer IPs).
func (c *Cluster) RouteToNode(prefix netip.Prefix, n *Node) {
	c.t.Helper()
	via, ok := n.ip(prefix.Addr().Is4())
	if !ok {
		c.t.Fatalf("node %s has no address of %s's family", n.Name, prefix)
	}
	if prefix.Addr().Is4() {
		c.sh(c.Fabric, "ip", "route", "add", prefix.String(), "via", via.String())
	} else {
		c.sh(c.Fabric, "ip", "-6", "route", "add", prefix.String(), "via", via.String())
	}
}

// AddClientAddress gives the external client another IPv4 or IPv6
// source address, routed back to it by the fabric.
func (c *Cluster) AddClientAddress(ip netip.Addr) {
	c.t.Helper()
	if ip.Is4() {
		c.sh(c.Client, "ip", "addr", "add", ip.String()+"/32", "dev", "eth0")
		c.sh(c.Fabric, "ip", "route", "add", ip.String()+"/32", "via", ClientIP4.String())
	} else {
		c.sh(c.Client, "ip", "-6", "addr", "add", ip.String()+"/128", "dev", "eth0", "nodad")
		c.sh(c.Fabric, "ip", "-6", "route", "add", ip.String()+"/128", "via", ClientIP6.String())
	}
}

func (n *Node) ip(v4 bool) (netip.Addr, bool) {
	for _, ip := range n.IPs {
		if ip.Is4() == v4 {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// Node returns the node of that name.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	c.t.Fatalf("no node %s", name)
	return nil
}

func (c *Cluster) must(name string, args ...string) string {
	c.t.Helper()
	out, err := run(nil, name, args...)
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// sh runs a command in a namespace.
func (c *Cluster) sh(ns string, args ...string) string {
	c.t.Helper()
	return c.must("ip", append([]string{"netns", "exec", ns}, args...)...)
}

// Exec runs a command in a namespace of the cluster.
func (c *Cluster) Exec(ns string, args ...string) (string, error) {
	return run(nil, "ip", append([]string{"netns", "exec", ns}, args...)...)
}

func (c *Cluster) remove() {
	for i := len(c.spaces) - 1; i >= 0; i-- {
		_, _ = run(nil, "ip", "netns", "del", c.spaces[i])
	}
	_ = os.RemoveAll(c.Dir)
}

// Namespace makes another namespace of the cluster (a pod's, before a
// test attaches it itself), removed with the cluster.
func (n *Node) Namespace(t testing.TB, name string) string {
	t.Helper()
	return n.cluster.namespace(n.Name + "-" + name)
}

// ExecHost runs a command in the node's host namespace.
func (n *Node) ExecHost(args ...string) (string, error) { return n.cluster.Exec(n.NS, args...) }

// ExecIn runs a command in a namespace.
func (n *Node) ExecIn(ns string, args ...string) (string, error) { return n.cluster.Exec(ns, args...) }
