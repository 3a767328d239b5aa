//go:build linux

package ovsharness

import (
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// serve runs the world's servers for one backend in a namespace: on every
// TCP and UDP port of the world, on ip (all addresses when unset), each
// answering with "name:port" until the test ends.
func serve(t testing.TB, ns string, ip netip.Addr, name string) {
	t.Helper()
	host := ""
	if ip.IsValid() {
		host = ip.String()
	}
	for _, port := range conformance.World.TCPPorts {
		var l net.Listener
		err := ovstest.InNS(ns, func() (err error) {
			l, err = net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
			return err
		})
		if err != nil {
			t.Fatalf("%s: listen tcp %d: %v", name, port, err)
		}
		t.Cleanup(func() { l.Close() })
		go answerTCP(l, conformance.Identity(name, port))
	}
	for _, port := range conformance.World.UDPPorts {
		var pc net.PacketConn
		err := ovstest.InNS(ns, func() (err error) {
			pc, err = net.ListenPacket("udp", net.JoinHostPort(host, fmt.Sprint(port)))
			return err
		})
		if err != nil {
			t.Fatalf("%s: listen udp %d: %v", name, port, err)
		}
		t.Cleanup(func() { pc.Close() })
		go answerUDP(pc, conformance.Identity(name, port))
	}
}

func answerTCP(l net.Listener, identity string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		fmt.Fprintln(c, identity)
		c.Close()
	}
}

func answerUDP(pc net.PacketConn, identity string) {
	buf := make([]byte, 1500)
	for {
		_, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		pc.WriteTo([]byte(identity), from)
	}
}
