//go:build linux

package ovs

import (
	"bufio"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	"golang.org/x/sys/unix"
)

// TestRoutingDecrementsTTL: the bridge routes, so it decrements the TTL
// (IPv6: the hop limit) of what it routes, and a packet it would route
// with a TTL of 1 dies there, as at any router: a routing loop through the
// bridge ends instead of spinning. A pod reaches another pod of its node
// (one route: the bridge) with a TTL of 2, not with 1.
func TestRoutingDecrementsTTL(t *testing.T) {
	c := ovstest.NewCluster(t, false, node1)
	file := c.WriteClusterFile(t)
	p := c.Nodes[0].StartSwitchyard(t, "--file="+file, "--min-sync-period=0")
	if err := p.WaitSynced(time.Time{}, func() bool { return true }, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	client := c.Nodes[0].AddPod(t, "c")
	server := c.Nodes[0].AddPod(t, "s")
	ovstest.ServeTCP(t, server.NS, 8080, "s")
	for _, ip := range server.IPs {
		dst := netip.AddrPortFrom(ip, 8080)
		if id, err := dialWithTTL(client.NS, dst, 2); id != "s" {
			t.Errorf("%s with a TTL of 2: %q, %v; want the server", dst, id, err)
		}
		if id, err := dialWithTTL(client.NS, dst, 1); err == nil {
			t.Errorf("%s with a TTL of 1: reached %q through the bridge, want it dropped there", dst, id)
		}
	}
}

// dialWithTTL connects from a namespace with the given TTL (hop limit)
// and reads the server's identity line.
func dialWithTTL(ns string, dst netip.AddrPort, ttl int) (string, error) {
	var id string
	err := ovstest.InNS(ns, func() error {
		d := net.Dialer{Timeout: 1500 * time.Millisecond, Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				if dst.Addr().Is4() {
					serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TTL, ttl)
				} else {
					serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS, ttl)
				}
			})
			if err != nil {
				return err
			}
			return serr
		}}
		conn, err := d.Dial("tcp", dst.String())
		if err != nil {
			return err
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(2 * time.Second))
		id, err = bufio.NewReader(conn).ReadString('\n')
		if len(id) > 0 {
			id = id[:len(id)-1]
		}
		return err
	})
	return id, err
}
