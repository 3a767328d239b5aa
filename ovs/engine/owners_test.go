package engine

import (
	"net/netip"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// A service port's key names it back; no other key names one.
func TestOwnerKeyNamesItsServicePort(t *testing.T) {
	for _, n := range []graph.ServicePortName{
		{Namespace: "ns", Name: "web", Port: "http", Protocol: graph.TCP},
		{Namespace: "kube-system", Name: "kube-dns", Port: "dns-tcp", Protocol: graph.TCP},
		{Namespace: "a.b", Name: "c-d", Port: "", Protocol: graph.SCTP}, // an unnamed port
	} {
		if got, ok := ServicePortOwner(n).servicePort(); !ok || got != n {
			t.Errorf("%s: named back as %v (%v)", n, got, ok)
		}
	}
	for _, o := range []OwnerKey{StaticOwner, NoOwner, PodOwner(7), PeerOwner("node-2"),
		FragmentsOwner(netip.MustParseAddr("fd00::10")), "sp/", "sp/ns", "sp/ns/web"} {
		if n, ok := o.servicePort(); ok {
			t.Errorf("%q names the service port %s", o, n)
		}
	}
}
