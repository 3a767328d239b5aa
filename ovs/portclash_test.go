//go:build linux

package ovs

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// clashWorld is two nodes (overlay or routed) with a dual-stack Service
// web (port 80) whose one endpoint r1 (port 8080) is on node-2, switchyard
// on both with args, a pod c on node-1 and r1 serving.
type clashWorld struct {
	c    *ovstest.Cluster
	pod  *ovstest.Pod
	vips []netip.AddrPort // per family
	r1s  []netip.AddrPort
}

func newClashWorld(t *testing.T, overlay bool, args ...string) *clashWorld {
	w := &clashWorld{
		vips: []netip.AddrPort{netip.MustParseAddrPort("10.96.0.10:80"), netip.MustParseAddrPort("[fd00:96::10]:80")},
		r1s:  []netip.AddrPort{netip.MustParseAddrPort("10.244.2.10:8080"), netip.MustParseAddrPort("[fd00:244:2::10]:8080")},
	}
	w.c = ovstest.NewCluster(t, overlay, node1, node2)
	file := w.c.WriteClusterFile(t, Service("ns", "web", ClusterIPs(w.vips[0].Addr().String(), w.vips[1].Addr().String()), Port("http", v1.ProtocolTCP, 80, 0)),
		Slice("ns", "web-4", "web", discovery.AddressTypeIPv4, SlicePort("http", v1.ProtocolTCP, 8080), Endpoint(w.r1s[0].Addr().String(), OnNode("node-2"))),
		Slice("ns", "web-6", "web", discovery.AddressTypeIPv6, SlicePort("http", v1.ProtocolTCP, 8080), Endpoint(w.r1s[1].Addr().String(), OnNode("node-2"))))
	for _, n := range w.c.Nodes {
		p := n.StartSwitchyard(t, append([]string{"--file=" + file, "--min-sync-period=0"}, args...)...)
		routed := func() bool {
			return n.HasRoute(netip.PrefixFrom(w.vips[0].Addr(), 32)) && n.HasRoute(netip.PrefixFrom(w.vips[1].Addr(), 128))
		}
		if err := p.WaitSynced(time.Time{}, routed, 20*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	w.pod = w.c.Nodes[0].AddPod(t, "c", netip.MustParseAddr("10.244.1.5"), netip.MustParseAddr("fd00:244:1::5"))
	ovstest.ServeTCP(t, w.c.Nodes[1].AddPod(t, "r1", w.r1s[0].Addr(), w.r1s[1].Addr()).NS, w.r1s[0].Port(), "r1")
	return w
}

// A client (the node itself, or a pod) that reached an endpoint through
// its ClusterIP and then connects to the endpoint straight from the same
// source port, while the first connection is still tracked (TIME_WAIT):
// after the DNAT both have the same reply tuple. Linux conntrack gives the
// second connection another source port (its NAT's null binding); so does
// the bridge's commit with nat(src) (pipeline.Config.CommitNullSNAT), and
// the endpoint answers. Without it, OVS's userspace conntrack tracked both
// under one reply tuple and sent the endpoint's answer back un-DNATed as
// the ClusterIP's: the connection timed out (15 + 15 failures on OVS
// 3.1, 29 on 3.5).
//
// The null SNAT is forced on: on userspace OVS before 3.3 (Debian 12's,
// `make unit`) the driver leaves it off by itself, because there its
// conntrack blocks a 4-tuple's reuse after a null SNAT
// (TestSameFourTupleAgainIsAnswered, docs/ovs.md); on 3.3 and later
// (`make ovs-next`) it would choose it anyway. What is checked is that the
// pipeline resolves the clash with it. The
// other order (straight, then through the ClusterIP) is the DNAT's own
// clash check's; it is tried too. IPv4 and IPv6.
func TestSameSourcePortThroughServiceThenStraight(t *testing.T) {
	for _, overlay := range []bool{true, false} {
		t.Run(fmt.Sprintf("overlay=%v", overlay), func(t *testing.T) {
			w := newClashWorld(t, overlay, "--ovs-conntrack-null-snat=on")
			port := uint16(41000)
			for _, from := range []struct{ name, ns string }{{"node", w.c.Nodes[0].NS}, {"pod", w.pod.NS}} {
				for fam := range w.vips {
					for _, order := range [][2]netip.AddrPort{{w.vips[fam], w.r1s[fam]}, {w.r1s[fam], w.vips[fam]}} {
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

// A client connecting to an endpoint again on the same 4-tuple (the same
// source port) while the last connection is still tracked, as kubelet's
// probes do, is answered every time: with the driver's own choice of
// commit (--ovs-conntrack-null-snat=auto), which is checked first against
// the OVS at hand. On OVS 3.1's userspace datapath (this machine's) it is
// without a null SNAT, which there left 3 of 4 such connections
// unanswered (the reverse entry outlives the connection) and kept
// upstream's e2e pods from becoming Ready; on 3.3 and later (`make
// ovs-next`: Debian 13's 3.5) it is with one.
func TestSameFourTupleAgainIsAnswered(t *testing.T) {
	w := newClashWorld(t, true)
	for _, n := range w.c.Nodes {
		version := n.OVS.Version()
		want, why := nullSNATDecision(NullSNATAuto, "netdev", version)
		commits := n.OVS.Ofctl("dump-flows", "br-sy", "table=10")
		got := strings.Count(commits, "nat(src)")
		if all := got == 4; all != want || got != 0 && !all {
			t.Fatalf("%s, OVS %s: %d of its commits with nat(src), want them all %v (%s):\n%s", n.Name, version, got, want, why, commits)
		}
		t.Logf("%s, OVS %s: null SNAT %v (%s)", n.Name, version, want, why)
	}
	local := w.c.Nodes[0].AddPod(t, "r0", netip.MustParseAddr("10.244.1.10"), netip.MustParseAddr("fd00:244:1::10"))
	ovstest.ServeTCP(t, local.NS, 8080, "r0")
	port := uint16(42000)
	for _, from := range []struct{ name, ns string }{{"node", w.c.Nodes[0].NS}, {"pod", w.pod.NS}} {
		for _, to := range []struct {
			id  string
			dst netip.AddrPort
		}{{"r0", netip.MustParseAddrPort("10.244.1.10:8080")}, {"r0", netip.MustParseAddrPort("[fd00:244:1::10]:8080")}, {"r1", w.r1s[0]}, {"r1", w.r1s[1]}} {
			port++
			for k := range 4 {
				id, _, err := ovstest.ProbeTCPFromPort(from.ns, netip.Addr{}, port, to.dst, 2*time.Second)
				if id != to.id {
					t.Errorf("%s from port %d to %v, connection %d: %q, %v (want %s)", from.name, port, to.dst, k+1, id, err, to.id)
				}
				time.Sleep(300 * time.Millisecond)
			}
		}
	}
}
