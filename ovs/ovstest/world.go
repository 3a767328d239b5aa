//go:build linux

package ovstest

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// Pod is a network namespace attached to the bridge by a veth.
type Pod struct {
	Name   string
	NS     string
	HostIf string // the bridge-side interface
	IPs    []netip.Addr
	MAC    net.HardwareAddr
}

var ifSeq atomic.Int32

// Addressing of the test world.
var (
	Gateway4  = netip.MustParseAddr("10.244.1.1")
	Gateway6  = netip.MustParseAddr("fd00:244:1::1")
	NodeIP4   = netip.MustParseAddr("192.168.100.10")
	NodeIP6   = netip.MustParseAddr("fd00:100::10")
	Router4   = netip.MustParseAddr("192.168.100.1")
	Router6   = netip.MustParseAddr("fd00:100::1")
	Node2IP4  = netip.MustParseAddr("192.168.200.2")
	ClientIP4 = netip.MustParseAddr("198.51.100.5")
	ClientIP6 = netip.MustParseAddr("2001:db8:51::5")
	// Routed to the node by the network: service frontends reached from
	// outside.
	ExternalPrefixes = []string{"203.0.113.0/24", "192.0.2.0/24", "2001:db8:113::/64"}
)

// child makes a namespace owned by this OVS (deleted with it).
func (o *OVS) child(suffix string) string {
	ns := o.NS + "-" + suffix
	o.must("ip", "netns", "add", ns)
	o.children = append(o.children, ns)
	o.must("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
	noDAD(o, ns)
	return ns
}

// noDAD turns off IPv6 duplicate address detection in a namespace: a
// tentative link-local address delays neighbour discovery by a second,
// which reads as a lost connection in a test.
func noDAD(o *OVS, ns string) {
	o.must("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
}

// inNS runs a command in a namespace.
func (o *OVS) inNS(ns string, args ...string) string {
	o.t.Helper()
	return o.must("ip", append([]string{"netns", "exec", ns}, args...)...)
}

// offload turns off TX checksum offload on an interface: the userspace
// datapath sees partial checksums otherwise and conntrack drops them.
func (o *OVS) offload(ns, dev string) { o.inNS(ns, "ethtool", "-K", dev, "tx", "off") }

func (o *OVS) mac(ns, dev string) net.HardwareAddr {
	o.t.Helper()
	out := o.inNS(ns, "cat", "/sys/class/net/"+dev+"/address")
	m, err := net.ParseMAC(strings.TrimSpace(out))
	if err != nil {
		o.t.Fatal(err)
	}
	return m
}

// AddPod creates a pod with the given addresses (one per family), its
// default routes through the bridge's virtual gateway, and plugs it into
// the bridge with the external_ids the OVS driver reads.
func (o *OVS) AddPod(bridge, name string, ips ...netip.Addr) *Pod {
	o.t.Helper()
	p := &Pod{Name: name, NS: o.child(name), HostIf: fmt.Sprintf("sy%dp%d", os.Getpid()%10000, ifSeq.Add(1)), IPs: ips}
	o.inNS(o.NS, "ip", "link", "add", p.HostIf, "type", "veth", "peer", "name", "eth0", "netns", p.NS)
	o.inNS(o.NS, "ip", "link", "set", p.HostIf, "up")
	o.offload(o.NS, p.HostIf)
	o.offload(p.NS, "eth0")
	o.inNS(p.NS, "ip", "link", "set", "eth0", "up")
	var ipStrs []string
	for _, ip := range ips {
		ipStrs = append(ipStrs, ip.String())
		if ip.Is4() {
			o.inNS(p.NS, "ip", "addr", "add", ip.String()+"/32", "dev", "eth0")
			o.inNS(p.NS, "ip", "route", "add", Gateway4.String(), "dev", "eth0")
			o.inNS(p.NS, "ip", "route", "add", "default", "via", Gateway4.String(), "dev", "eth0")
		} else {
			o.inNS(p.NS, "ip", "-6", "addr", "add", ip.String()+"/128", "dev", "eth0", "nodad")
			o.inNS(p.NS, "ip", "-6", "route", "add", Gateway6.String(), "dev", "eth0")
			o.inNS(p.NS, "ip", "-6", "route", "add", "default", "via", Gateway6.String(), "dev", "eth0")
		}
	}
	p.MAC = o.mac(p.NS, "eth0")
	o.Vsctl("add-port", bridge, p.HostIf, "--", "set", "interface", p.HostIf,
		"external_ids:switchyard.io/pod-ips="+strings.Join(ipStrs, ","),
		"external_ids:switchyard.io/pod-mac="+p.MAC.String(),
		"external_ids:switchyard.io/pod="+name)
	return p
}

// Network is what lies behind the uplink: a router namespace, node-2
// (holding remote backends) and an external client, all routed.
type Network struct {
	UplinkIf  string           // the bridge-side interface
	RouterMAC net.HardwareAddr // next hop for traffic leaving the uplink
	Router    string           // namespaces
	Node2     string
	Client    string
}

// AddNetwork builds the network behind the bridge's uplink. Remote
// backends are addresses on node-2's loopback (AddRemoteBackend).
func (o *OVS) AddNetwork(bridge string) *Network {
	o.t.Helper()
	n := &Network{UplinkIf: fmt.Sprintf("sy%dup", os.Getpid()%10000), Router: o.child("router"), Node2: o.child("node2"), Client: o.child("client")}
	o.inNS(o.NS, "ip", "link", "add", n.UplinkIf, "type", "veth", "peer", "name", "up0", "netns", n.Router)
	o.inNS(o.NS, "ip", "link", "set", n.UplinkIf, "up")
	o.offload(o.NS, n.UplinkIf)
	o.Vsctl("add-port", bridge, n.UplinkIf)

	r := n.Router
	o.inNS(r, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	o.inNS(r, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
	o.offload(r, "up0")
	o.inNS(r, "ip", "link", "set", "up0", "up")
	o.inNS(r, "ip", "addr", "add", Router4.String()+"/24", "dev", "up0")
	o.inNS(r, "ip", "-6", "addr", "add", Router6.String()+"/64", "dev", "up0", "nodad")
	n.RouterMAC = o.mac(r, "up0")
	for _, p := range append([]string{"10.244.1.0/24"}, ExternalPrefixes...) {
		if strings.Contains(p, ":") {
			continue
		}
		o.inNS(r, "ip", "route", "add", p, "via", NodeIP4.String())
	}
	for _, p := range append([]string{"fd00:244:1::/64"}, ExternalPrefixes...) {
		if strings.Contains(p, ":") {
			o.inNS(r, "ip", "-6", "route", "add", p, "via", NodeIP6.String())
		}
	}
	link := func(ns, rIf, nsIf string, rIP, nsIP string, v6 bool) {
		o.inNS(r, "ip", "link", "add", rIf, "type", "veth", "peer", "name", nsIf, "netns", ns)
		o.offload(r, rIf)
		o.offload(ns, nsIf)
		o.inNS(r, "ip", "link", "set", rIf, "up")
		o.inNS(ns, "ip", "link", "set", nsIf, "up")
		gw, _, _ := strings.Cut(rIP, "/")
		if v6 {
			o.inNS(r, "ip", "-6", "addr", "add", rIP, "dev", rIf, "nodad")
			o.inNS(ns, "ip", "-6", "addr", "add", nsIP, "dev", nsIf, "nodad")
			o.inNS(ns, "ip", "-6", "route", "add", "default", "via", gw)
		} else {
			o.inNS(r, "ip", "addr", "add", rIP, "dev", rIf)
			o.inNS(ns, "ip", "addr", "add", nsIP, "dev", nsIf)
			o.inNS(ns, "ip", "route", "add", "default", "via", gw)
		}
	}
	link(n.Node2, "n2", "eth0", "192.168.200.1/24", Node2IP4.String()+"/24", false)
	o.inNS(r, "ip", "route", "add", "10.244.2.0/24", "via", Node2IP4.String())
	link(n.Client, "cl", "eth0", "198.51.100.1/24", ClientIP4.String()+"/24", false)
	link(n.Client, "cl6", "eth1", "2001:db8:51::1/64", ClientIP6.String()+"/64", true)
	return n
}

// AddRemoteBackend puts an address on node-2 (a pod of another node).
func (o *OVS) AddRemoteBackend(n *Network, ip netip.Addr) {
	o.inNS(n.Node2, "ip", "addr", "add", ip.String()+"/32", "dev", "lo")
}

// AddClientAddress gives the external client another IPv4 source
// address, routed back to it by the router.
func (o *OVS) AddClientAddress(n *Network, ip netip.Addr) {
	o.inNS(n.Client, "ip", "addr", "add", ip.String()+"/32", "dev", "eth0")
	o.inNS(n.Router, "ip", "route", "add", ip.String()+"/32", "via", ClientIP4.String())
}

// OFPort returns an interface's OpenFlow port number.
func (o *OVS) OFPort(iface string) string {
	return strings.TrimSpace(o.Vsctl("get", "interface", iface, "ofport"))
}

// Fataler is the part of testing.TB the helpers need.
type Fataler = testing.TB
