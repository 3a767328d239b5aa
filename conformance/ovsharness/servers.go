//go:build linux

package ovsharness

import (
	"testing"

	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// serve runs the world's servers of one member in a namespace: on every
// TCP and UDP port of the world, on all addresses, each answering with
// "name:port" and the source it saw, until the test ends.
func serve(t testing.TB, ns string, name string) {
	t.Helper()
	for _, port := range conformance.World.TCPPorts {
		ovstest.ServeTCPAt(t, ns, "", port, conformance.Identity(name, port))
	}
	for _, port := range conformance.World.UDPPorts {
		ovstest.ServeUDPAt(t, ns, "", port, conformance.Identity(name, port))
	}
}
