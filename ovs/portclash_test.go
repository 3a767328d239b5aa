//go:build linux

package ovs

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// A client (the node itself, or a pod) that reached an endpoint through
// its ClusterIP and then connects to the endpoint straight from the same
// source port, while the first connection is still tracked (TIME_WAIT):
// after the DNAT both have the same reply tuple. The kernel would give
// the second connection another source port (its NAT's null binding); the
// bridge's commit does the same (nat(src=0.0.0.0), nat(src=::)), and the
// endpoint answers. Without it, OVS's userspace conntrack tracked both
// under one reply tuple and sent the endpoint's answer back un-DNATed as
// the ClusterIP's: the connection timed out (seen as a rare drop in the
// conformance runs, kernel-chosen ports meeting by chance). The other
// order (straight, then through the ClusterIP) is the DNAT's own clash
// check's; it is tried too. IPv4 and IPv6.
func TestSameSourcePortThroughServiceThenStraight(t *testing.T) {
	vips := []netip.AddrPort{netip.MustParseAddrPort("10.96.0.10:80"), netip.MustParseAddrPort("[fd00:96::10]:80")}
	r1s := []netip.AddrPort{netip.MustParseAddrPort("10.244.2.10:8080"), netip.MustParseAddrPort("[fd00:244:2::10]:8080")}
	for _, overlay := range []bool{true, false} {
		t.Run(fmt.Sprintf("overlay=%v", overlay), func(t *testing.T) {
			c := ovstest.NewCluster(t, overlay, node1, node2)
			file := c.WriteClusterFile(t, Service("ns", "web", ClusterIPs(vips[0].Addr().String(), vips[1].Addr().String()), Port("http", v1.ProtocolTCP, 80, 0)),
				Slice("ns", "web-4", "web", discovery.AddressTypeIPv4, SlicePort("http", v1.ProtocolTCP, 8080), Endpoint(r1s[0].Addr().String(), OnNode("node-2"))),
				Slice("ns", "web-6", "web", discovery.AddressTypeIPv6, SlicePort("http", v1.ProtocolTCP, 8080), Endpoint(r1s[1].Addr().String(), OnNode("node-2"))))
			for _, n := range c.Nodes {
				p := n.StartSwitchyard(t, "--file="+file, "--min-sync-period=0")
				routed := func() bool {
					return n.HasRoute(netip.PrefixFrom(vips[0].Addr(), 32)) && n.HasRoute(netip.PrefixFrom(vips[1].Addr(), 128))
				}
				if err := p.WaitSynced(time.Time{}, routed, 20*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			pod := c.Nodes[0].AddPod(t, "c", netip.MustParseAddr("10.244.1.5"), netip.MustParseAddr("fd00:244:1::5"))
			ovstest.ServeTCP(t, c.Nodes[1].AddPod(t, "r1", r1s[0].Addr(), r1s[1].Addr()).NS, r1s[0].Port(), "r1")
			port := uint16(41000)
			for _, from := range []struct{ name, ns string }{{"node", c.Nodes[0].NS}, {"pod", pod.NS}} {
				for fam := range vips {
					for _, order := range [][2]netip.AddrPort{{vips[fam], r1s[fam]}, {r1s[fam], vips[fam]}} {
						for range 3 {
							port++
							for k, dst := range order {
								id, _, err := ovstest.ProbeTCPFromPort(from.ns, netip.Addr{}, port, dst, 2*time.Second)
								if id != "r1" {
									t.Errorf("%s from port %d, connection %d of %v: %q, %v (want r1)", from.name, port, k+1, order, id, err)
								}
							}
						}
					}
				}
			}
		})
	}
}
