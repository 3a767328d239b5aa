package hns_test

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/build"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	testingclock "k8s.io/utils/clock/testing"
)

var (
	tcp    = v1.ProtocolTCP
	udp    = v1.ProtocolUDP
	v4     = discovery.AddressTypeIPv4
	v6     = discovery.AddressTypeIPv6
	nodeIP = netip.MustParseAddr("192.168.0.11")
	node2  = netip.MustParseAddr("192.168.0.12")
)

// world is a simulated Windows node: an HNS network with two pods, and
// a driver reading the graph from a tracker.
type world struct {
	t     *testing.T
	sim   *hnssim.Sim
	opts  hns.Options
	env   dataplanes.Env
	d     *hns.Driver
	tr    *tracker.Tracker
	netTy string
	clock *testingclock.FakeClock
}

func newWorld(t *testing.T, winBuild hnssim.Build, networkType string) *world {
	t.Helper()
	// The core carries the annotation the HNS driver reads, as the command
	// does from the factory's Annotations().
	tr := tracker.New(tracker.Options{NodeName: "node-1", Build: build.Options{Annotations: (&hns.Factory{}).Annotations()}})
	w := &world{t: t, sim: hnssim.New(winBuild), tr: tr, netTy: networkType}
	w.sim.AddNetwork("cbr0", networkType, hns.RemoteSubnet{DestinationPrefix: "10.244.2.0/24", ProviderAddress: node2.String()})
	w.sim.AddHostIP(nodeIP)
	w.sim.AddLocalEndpoint("cbr0", "p1", "10.244.1.5")
	w.sim.AddLocalEndpoint("cbr0", "p2", "10.244.1.6")
	w.sim.AddLocalEndpoint("cbr0", "p1v6", "fd00:244:1::5")
	w.clock = testingclock.NewFakeClock(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	w.opts = hns.Options{NetworkName: "cbr0", StateFile: filepath.Join(t.TempDir(), "owned.json"), Now: w.clock.Now}
	if networkType == "Overlay" {
		w.opts.SourceVIP = "10.244.1.254"
	}
	w.tr.UpsertNode(Node("node-1", "zone-a", nodeIP.String()))
	w.start()
	return w
}

// start makes a new driver (a restarted switchyard) over the same HNS;
// the one before it is gone (its instance lock with it).
func (w *world) start() {
	w.t.Helper()
	if w.d != nil {
		w.d.Close()
	}
	d, err := hns.NewDriver(w.sim, w.opts, w.env)
	if err != nil {
		w.t.Fatal(err)
	}
	w.d = d
}

// sync and apply take a batch as the runner does: a success, or a
// dataplanes.Degraded (the rest programmed), commits it.
func (w *world) sync() error {
	b := w.tr.Next(true)
	err := w.d.Sync(context.Background(), b.Snapshot)
	if taken(err) {
		w.tr.Commit(b)
	}
	return err
}

func taken(err error) bool {
	var degraded *dataplanes.Degraded
	return err == nil || errors.As(err, &degraded)
}

// later moves the driver's clock (its retries' backoff) by d.
func (w *world) later(d time.Duration) { w.clock.Step(d) }

func (w *world) mustSync() {
	w.t.Helper()
	if err := w.sync(); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) apply() error {
	b := w.tr.Next(false)
	err := w.d.Apply(context.Background(), b.Delta)
	if taken(err) {
		w.tr.Commit(b)
	}
	return err
}

func (w *world) mustApply() {
	w.t.Helper()
	if err := w.apply(); err != nil {
		w.t.Fatal(err)
	}
}

func local(ip string) SliceOption  { return Endpoint(ip, OnNode("node-1")) }
func remote(ip string) SliceOption { return Endpoint(ip, OnNode("node-2")) }

// lbs returns the simulator's load balancers by their frontend
// ("VIP:port/proto" or "*:port/proto" for NodePort).
func (w *world) lbs() map[string]hns.LoadBalancer {
	w.t.Helper()
	all, err := w.sim.LoadBalancers()
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]hns.LoadBalancer{}
	for _, lb := range all {
		vip := "*"
		if len(lb.FrontendVIPs) > 0 {
			vip = lb.FrontendVIPs[0]
		}
		pm := lb.PortMappings[0]
		out[netip.MustParseAddrPort(addrPort(vip, pm.ExternalPort)).String()+"/"+proto(pm.Protocol)] = lb
	}
	return out
}

func addrPort(vip string, port uint16) string {
	if vip == "*" {
		vip = "0.0.0.0"
	}
	return netip.AddrPortFrom(netip.MustParseAddr(vip), port).String()
}

func proto(p uint32) string { return map[uint32]string{6: "tcp", 17: "udp", 132: "sctp"}[p] }

// backends resolves a load balancer's endpoint IDs to IPs.
func (w *world) backends(lb hns.LoadBalancer) []string {
	w.t.Helper()
	eps, _ := w.sim.Endpoints(w.networkID())
	byID := map[string]string{}
	for _, e := range eps {
		byID[e.ID] = e.IPConfigurations[0].IPAddress
	}
	var out []string
	for _, id := range lb.HostComputeEndpoints {
		out = append(out, byID[id])
	}
	return sortedStrings(out)
}

func (w *world) networkID() string {
	n, _ := w.sim.Network("cbr0")
	return n.ID
}
