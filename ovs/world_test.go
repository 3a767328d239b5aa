//go:build linux

package ovs

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/klog/v2"
)

// world is node-1 with this test's driver in the test process (so a test
// drives Sync and Apply itself), node-2 with a switchyard process, pods on
// both attached by switchyard-cni, and the outside.
type world struct {
	t      *testing.T
	c      *ovstest.Cluster
	n      *ovstest.Node // node-1
	o      *ovstest.OVS  // node-1's
	p1, p2 *ovstest.Pod
	client *ovstest.Pod
	r1     *ovstest.Pod // on node-2
	opts   Options
	d      *Driver
	tr     *tracker.Tracker
	// rounds are the rounds d asked for (Env.RequestRound), served once
	// d has had its first Sync (serveRounds).
	rounds  chan struct{}
	serving bool
}

const bridge = "br-sy"

var (
	p1IP4  = netip.MustParseAddr("10.244.1.5")
	p1IP6  = netip.MustParseAddr("fd00:244:1::5")
	p2IP4  = netip.MustParseAddr("10.244.1.6")
	cIP4   = netip.MustParseAddr("10.244.1.7")
	cIP6   = netip.MustParseAddr("fd00:244:1::7")
	remote = netip.MustParseAddr("10.244.2.10")
	nodeIP = netip.MustParseAddr("192.168.100.10")
	node6  = netip.MustParseAddr("fd00:100::10")

	node2 = ovstest.NodeSpec{Name: "node-2",
		IPs:      []netip.Addr{netip.MustParseAddr("192.168.100.11"), netip.MustParseAddr("fd00:100::11")},
		PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.2.0/24"), netip.MustParsePrefix("fd00:244:2::/64")}}
)

func newWorld(t *testing.T) *world {
	t.Helper()
	c := ovstest.NewCluster(t, false, node1, node2)
	w := &world{t: t, c: c, n: c.Nodes[0], o: c.Nodes[0].OVS}
	for _, p := range []string{"203.0.113.0/24", "192.0.2.0/24"} {
		c.RouteToNode(netip.MustParsePrefix(p), w.n)
	}

	// node-2: a switchyard process that knows both nodes, and r1.
	file := c.WriteClusterFile(t)
	n2 := c.Nodes[1]
	p := n2.StartSwitchyard(t, "--file="+file, "--min-sync-period=0")
	if err := p.WaitSynced(time.Time{}, func() bool { return true }, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	w.r1 = n2.AddPod(t, "r1", remote)
	ovstest.ServeTCP(t, w.r1.NS, 8080, "r1")
	ovstest.ServeUDP(t, w.r1.NS, 5353, "r1")

	// node-1: the driver under test, made from the flags a user passes.
	fs := newFlagSet()
	w.opts.AddFlags(fs)
	if err := fs.Parse(w.n.DriverFlags()); err != nil {
		t.Fatal(err)
	}
	w.opts.HostNetNS = "/var/run/netns/" + w.n.NS
	w.tr = tracker.New(tracker.Options{NodeName: "node-1", Peers: true})
	for _, n := range c.NodeObjects() {
		w.tr.UpsertNode(n)
	}
	w.start()
	w.sync()
	w.p1 = w.n.AddPod(t, "p1", p1IP4, p1IP6)
	w.p2 = w.n.AddPod(t, "p2", p2IP4)
	w.client = w.n.AddPod(t, "c", cIP4, cIP6)
	for _, p := range []*ovstest.Pod{w.p1, w.p2} {
		ovstest.ServeTCP(t, p.NS, 8080, p.Name)
		ovstest.ServeUDP(t, p.NS, 5353, p.Name)
	}
	return w
}

// start creates a driver (as a new switchyard process would).
func (w *world) start() {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rounds := make(chan struct{}, 1)
	env := dataplanes.Env{RequestRound: func() {
		select {
		case rounds <- struct{}{}:
		default:
		}
	}}
	d, err := newDriver(ctx, w.opts, env)
	if err != nil {
		w.t.Fatal(err)
	}
	w.d, w.rounds, w.serving = d, rounds, false
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
	if !w.serving {
		w.serving = true
		serveRounds(w.d, w.rounds)
	}
}

// serveRounds stands in for the runner's side of Env.RequestRound while
// the test drives Sync and Apply itself: each round d asks for is an
// Apply of an empty delta, asked again 100 ms after a failure, until d is
// closed. (The runner's own handling is core/runner's TestRequestedRound;
// the switchyard processes of the e2e and conformance tests run it.)
func serveRounds(d *Driver, rounds chan struct{}) {
	go func() {
		for {
			select {
			case <-d.stop:
				return
			case <-rounds:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := d.Apply(ctx, graph.Delta{})
			cancel()
			var degraded *dataplanes.Degraded
			if err != nil && !errors.As(err, &degraded) {
				klog.ErrorS(err, "A round the driver asked for failed; asking again")
				time.Sleep(100 * time.Millisecond)
				select {
				case rounds <- struct{}{}:
				default:
				}
			}
		}
	}()
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
