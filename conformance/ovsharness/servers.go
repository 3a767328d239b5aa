//go:build linux

package ovsharness

import (
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
		ovstest.ServeTCPAt(t, ns, host, port, conformance.Identity(name, port))
	}
	for _, port := range conformance.World.UDPPorts {
		ovstest.ServeUDPAt(t, ns, host, port, conformance.Identity(name, port))
	}
}
