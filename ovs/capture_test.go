//go:build linux

package ovs

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/ovs/hostnet"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// TestExternalIPCapturesOnlyItsPorts: a Service names as its external IP
// an address the node talks to for something else (here the node's DNS
// resolver, 198.51.100.5, serving TCP 53). Only the Service's port is
// captured, as kube-proxy does: the node and its pods reach the Service
// on that port and the resolver on its own, under a strict reverse-path
// filter (the replies of the captured connection come back through the
// gateway). Removing the Service removes the capture.
func TestExternalIPCapturesOnlyItsPorts(t *testing.T) {
	w := newWorld(t)
	resolver := ovstest.ClientIP4
	ovstest.ServeTCP(t, w.c.Client, 53, "resolver")
	if out, err := w.n.ExecHost("sysctl", "-qw", "net.ipv4.conf.all.rp_filter=1"); err != nil {
		t.Fatalf("strict rp_filter: %v %s", err, out)
	}
	w.tr.UpsertService(object.ServiceOf(Service("ns", "taken", ClusterIPs("10.96.0.90"), ExternalIPs(resolver.String()), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "taken-1", "taken", v4, SlicePort("http", tcp, 8080), onNode1(p1IP4.String()))))
	w.sync()

	for _, from := range []struct{ name, ns string }{{"the node", w.n.NS}, {"a pod", w.client.NS}} {
		if id, err := ovstest.ProbeTCP(from.ns, netip.Addr{}, netip.AddrPortFrom(resolver, 80), probeTimeout); id != "p1" {
			t.Errorf("%s -> the external IP's Service port: %q, %v; want the Service (p1)", from.name, id, err)
		}
		if id, err := ovstest.ProbeTCP(from.ns, netip.Addr{}, netip.AddrPortFrom(resolver, 53), probeTimeout); id != "resolver" {
			t.Errorf("%s -> the same address's other port: %q, %v; want the resolver itself", from.name, id, err)
		}
	}
	if main, _ := w.n.ExecHost("ip", "route", "show", "proto", "83"); strings.Contains(main, resolver.String()) {
		t.Errorf("the external IP is routed whole in the main table:\n%s", main)
	}

	w.tr.DeleteService("ns", "taken")
	w.sync()
	if out, _ := w.n.ExecHost("ip", "route", "show", "table", fmt.Sprint(hostnet.CaptureTable)); strings.Contains(out, resolver.String()) {
		t.Errorf("the Service is gone, its capture route stays:\n%s", out)
	}
	if id, err := ovstest.ProbeTCP(w.n.NS, netip.Addr{}, netip.AddrPortFrom(resolver, 53), probeTimeout); id != "resolver" {
		t.Errorf("the node -> the resolver after the Service went: %q, %v", id, err)
	}
}
