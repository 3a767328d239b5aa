//go:build linux

package ovs

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// world is a bridge with pods, a network behind its uplink, and a driver.
type world struct {
	t      *testing.T
	o      *ovstest.OVS
	net    *ovstest.Network
	p1, p2 *ovstest.Pod
	client *ovstest.Pod
	opts   Options
	d      *Driver
	tr     *tracker.Tracker
}

const bridge = "br-sy"

var (
	p1IP4  = netip.MustParseAddr("10.244.1.5")
	p1IP6  = netip.MustParseAddr("fd00:244:1::5")
	p2IP4  = netip.MustParseAddr("10.244.1.6")
	cIP4   = netip.MustParseAddr("10.244.1.7")
	cIP6   = netip.MustParseAddr("fd00:244:1::7")
	remote = netip.MustParseAddr("10.244.2.10")
)

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, o: ovstest.Start(t)}
	w.o.AddBridge(bridge)
	w.net = w.o.AddNetwork(bridge)
	w.p1 = w.o.AddPod(bridge, "p1", p1IP4, p1IP6)
	w.p2 = w.o.AddPod(bridge, "p2", p2IP4)
	w.client = w.o.AddPod(bridge, "c", cIP4, cIP6)
	w.o.AddRemoteBackend(w.net, remote)
	for _, p := range []*ovstest.Pod{w.p1, w.p2} {
		ovstest.ServeTCP(t, p.NS, 8080, p.Name)
		ovstest.ServeUDP(t, p.NS, 5353, p.Name)
	}
	ovstest.ServeTCP(t, w.net.Node2, 8080, "r1")
	ovstest.ServeUDP(t, w.net.Node2, 5353, "r1")

	fs := newFlagSet()
	w.opts.AddFlags(fs)
	w.opts.Bridge = bridge
	w.opts.RunDir = w.o.Dir
	w.opts.DatapathType = "netdev"
	w.opts.UplinkPort = w.net.UplinkIf
	w.opts.UplinkNextHop = w.net.RouterMAC.String()
	w.opts.GatewayIPs = []string{ovstest.Gateway4.String(), ovstest.Gateway6.String()}
	w.tr = tracker.New(tracker.Options{NodeName: "node-1"})
	w.tr.UpsertNode(Node("node-1", "zone-a", ovstest.NodeIP4.String(), ovstest.NodeIP6.String()))
	w.start()
	return w
}

// start creates a driver (as a new switchyard process would).
func (w *world) start() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := newDriver(ctx, w.opts)
	if err != nil {
		w.t.Fatal(err)
	}
	w.d = d
	w.t.Cleanup(func() { d.Close() })
}

// sync hands the tracker's whole graph to the driver.
func (w *world) sync() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := w.tr.Next(true)
	if err := w.d.Sync(ctx, b.Snapshot); err != nil {
		w.t.Fatal(err)
	}
	w.tr.Commit(b)
}

// apply hands the tracker's pending delta to the driver.
func (w *world) apply() graph.Delta {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := w.tr.Next(false)
	if err := w.d.Apply(ctx, b.Delta); err != nil {
		w.t.Fatal(err)
	}
	w.tr.Commit(b)
	return b.Delta
}

var (
	tcp = v1.ProtocolTCP
	udp = v1.ProtocolUDP
	v4  = discovery.AddressTypeIPv4
	v6  = discovery.AddressTypeIPv6
)

func onNode1(ip string) SliceOption { return Endpoint(ip, OnNode("node-1")) }
func onNode2(ip string) SliceOption { return Endpoint(ip, OnNode("node-2")) }

// probeMany probes n times and returns the identities seen (errors as
// "error: ...").
func probeMany(n int, probe func() (string, error)) map[string]int {
	seen := map[string]int{}
	for range n {
		id, err := probe()
		if err != nil {
			id = "error: " + err.Error()
		}
		seen[id]++
	}
	return seen
}
