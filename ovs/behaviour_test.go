//go:build linux

package ovs

import (
	"context"
	"errors"
	"fmt"
	"github.com/switchyard-proxy/switchyard/internal/instancelock"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// ourFlows lists our flows (cookie tag) as "cookie table duration".
type installed struct {
	cookie   string
	duration float64
}

var flowLine = regexp.MustCompile(`cookie=(0x[0-9a-f]+), duration=([0-9.]+)s, table=(\d+)`)

func ourFlows(w *world) map[string]installed {
	out := map[string]installed{}
	for _, m := range flowLine.FindAllStringSubmatch(w.o.Ofctl("dump-flows", bridge), -1) {
		if !strings.HasPrefix(m[1], "0x5359") {
			continue
		}
		d, _ := strconv.ParseFloat(m[2], 64)
		out[m[1]] = installed{m[1], d}
	}
	return out
}

func (w *world) stats() ofconn.Stats { return w.d.conn.Stats() }

func diff(a, b ofconn.Stats) ofconn.Stats {
	return ofconn.Stats{Bundles: b.Bundles - a.Bundles, FlowMods: b.FlowMods - a.FlowMods, GroupMods: b.GroupMods - a.GroupMods}
}

func webService(w *world) {
	w.tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), onNode1(p1IP4.String()))))
	w.tr.UpsertService(object.ServiceOf(Service("ns", "other", ClusterIPs("10.96.0.11"), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "other-1", "other", v4, SlicePort("http", tcp, 8080), onNode1(p2IP4.String()))))
}

func TestForeignFlowsAndGroupsAreNeverTouched(t *testing.T) {
	w := newWorld(t)
	w.o.Ofctl("add-flow", bridge, "table=20,priority=5,cookie=0x1234,actions=drop")
	w.o.Ofctl("add-group", bridge, "group_id=7,type=select,bucket=actions=drop")
	webService(w)
	w.sync()
	check := func(when string) {
		if !strings.Contains(w.o.Ofctl("dump-flows", bridge, "table=20"), "cookie=0x1234") {
			t.Fatalf("%s: the foreign flow is gone", when)
		}
		if !strings.Contains(w.o.Ofctl("dump-groups", bridge), "group_id=7,") {
			t.Fatalf("%s: the foreign group is gone", when)
		}
	}
	check("after sync")
	if ids := groupIDs(w.o.Ofctl("dump-groups", bridge)); len(ids) < 3 { // 7 and the two Services'
		t.Fatalf("groups after sync: %v, want ours beside the foreign one", ids)
	}
	for _, m := range flowLine.FindAllStringSubmatch(w.o.Ofctl("dump-flows", bridge), -1) {
		if !strings.HasPrefix(m[1], "0x5359") && m[1] != "0x1234" {
			t.Fatalf("a flow without our tag appeared: %v", m[0])
		}
	}
	w.sync() // a resync must not remove them either
	check("after resync")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.d.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	check("after cleanup")
	if n := len(ourFlows(w)); n != 0 {
		t.Fatalf("cleanup left %d of our flows", n)
	}
	if got := groupIDs(w.o.Ofctl("dump-groups", bridge)); !slices.Equal(got, []string{"7"}) {
		t.Fatalf("groups after cleanup: %v, want only the foreign group 7", got)
	}
}

var groupLine = regexp.MustCompile(`(?m)^\s*group_id=(\d+),`)

// groupIDs are the IDs of every group in an ovs-ofctl dump-groups, sorted.
func groupIDs(dump string) []string {
	var ids []string
	for _, m := range groupLine.FindAllStringSubmatch(dump, -1) {
		ids = append(ids, m[1])
	}
	slices.Sort(ids)
	return ids
}

// Without affinity an endpoint lives only in its service port's group
// (the bucket DNATs), so an endpoint change is one group modification and
// no flow.
func TestOneEndpointChangeIsOneGroupMod(t *testing.T) {
	w := newWorld(t)
	webService(w)
	w.sync()
	before := ourFlows(w)

	// An endpoint is added: the group is modified in place, and that is
	// all.
	s0 := w.stats()
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), onNode1(p1IP4.String()), onNode1(p2IP4.String()))))
	w.apply()
	if d := diff(s0, w.stats()); d != (ofconn.Stats{Bundles: 1, FlowMods: 0, GroupMods: 1}) {
		t.Fatalf("adding an endpoint cost %+v, want 1 bundle with 1 group mod", d)
	}
	seen := probeMany(20, func() (string, error) {
		return ovstest.ProbeTCP(w.client.NS, netip.Addr{}, ap("10.96.0.10", 80), probeTimeout)
	})
	if seen["p1"] == 0 || seen["p2"] == 0 {
		t.Fatalf("after adding p2: %v", seen)
	}

	// p1 goes: one group mod again.
	s1 := w.stats()
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), onNode1(p2IP4.String()))))
	w.apply()
	if d := diff(s1, w.stats()); d != (ofconn.Stats{Bundles: 1, FlowMods: 0, GroupMods: 1}) {
		t.Fatalf("removing an endpoint cost %+v, want 1 bundle with 1 group mod", d)
	}
	if id, err := ovstest.ProbeTCP(w.client.NS, netip.Addr{}, ap("10.96.0.10", 80), probeTimeout); id != "p2" {
		t.Fatalf("after removing p1: %q, %v", id, err)
	}

	// The other service's flows were never touched: same cookies, and
	// their durations kept growing.
	after := ourFlows(w)
	if len(after) != len(before) {
		t.Fatalf("%d flows before the endpoint changes, %d after: the number of endpoints changed the flows", len(before), len(after))
	}
	for c, f := range before {
		if a, ok := after[c]; ok && a.duration+0.001 < f.duration {
			t.Fatalf("flow %s was re-added (duration %.3f -> %.3f)", c, f.duration, a.duration)
		}
	}
}

func TestRestartAdoptsInstalledStateAndKeepsConnections(t *testing.T) {
	w := newWorld(t)
	webService(w)
	ovstest.ServeEcho(t, w.p1.NS, 9000)
	w.tr.UpsertService(object.ServiceOf(Service("ns", "echo", ClusterIPs("10.96.0.12"), Port("echo", tcp, 90, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "echo-1", "echo", v4, SlicePort("echo", tcp, 9000), onNode1(p1IP4.String()))))
	w.sync()
	conn, err := ovstest.Dial(w.client.NS, ap("10.96.0.12", 90), probeTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.RoundTrip("before", probeTimeout); err != nil {
		t.Fatal(err)
	}
	before := ourFlows(w)
	time.Sleep(100 * time.Millisecond)

	// A new driver (a restarted switchyard) syncs the same graph.
	w.d.Close()
	w.start()
	w.sync()
	if s := w.stats(); s.FlowMods != 0 || s.GroupMods != 0 {
		t.Fatalf("the restarted driver sent %d flow mods and %d group mods for an unchanged graph, want none", s.FlowMods, s.GroupMods)
	}
	after := ourFlows(w)
	if len(after) != len(before) {
		t.Fatalf("%d flows before the restart, %d after", len(before), len(after))
	}
	for c, f := range before {
		a, ok := after[c]
		if !ok || a.duration < f.duration {
			t.Fatalf("flow %s was removed or re-added across the restart", c)
		}
	}
	if err := conn.RoundTrip("after", probeTimeout); err != nil {
		t.Fatalf("the established connection broke across the restart: %v", err)
	}
}

func TestVswitchdRestartReplaysEverything(t *testing.T) {
	w := newWorld(t)
	webService(w)
	w.sync()
	want := len(ourFlows(w))
	if _, err := ovstest.ProbeTCP(w.client.NS, netip.Addr{}, ap("10.96.0.10", 80), probeTimeout); err != nil {
		t.Fatal(err)
	}
	w.o.KillVswitchd()
	w.o.StartVswitchd()
	up := time.Now()
	var err error
	for time.Since(up) < 10*time.Second {
		var id string
		if id, err = ovstest.ProbeTCP(w.client.NS, netip.Addr{}, ap("10.96.0.10", 80), 300*time.Millisecond); err == nil && id == "p1" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("traffic did not come back after ovs-vswitchd restarted: %v", err)
	}
	t.Logf("traffic back %v after ovs-vswitchd answered", time.Since(up).Round(time.Millisecond))
	if got := len(ourFlows(w)); got != want {
		t.Fatalf("%d flows after the restart, want %d", got, want)
	}
	// The gateway interface was made anew: its addresses and the host's
	// routes through it are back too (the node reaches the Service).
	for time.Since(up) < 10*time.Second {
		if _, err = ovstest.ProbeTCP(w.n.NS, netip.Addr{}, ap("10.96.0.10", 80), 300*time.Millisecond); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the node did not reach the Service again after ovs-vswitchd restarted: %v", err)
	}
}

func TestRemovedUDPEndpointConntrackIsFlushed(t *testing.T) {
	w := newWorld(t)
	w.tr.UpsertService(object.ServiceOf(Service("ns", "dns", ClusterIPs("10.96.0.53"), Port("dns", udp, 53, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "dns-1", "dns", v4, SlicePort("dns", udp, 5353), onNode1(p1IP4.String()))))
	w.sync()
	if id, err := ovstest.ProbeUDP(w.client.NS, netip.Addr{}, ap("10.96.0.53", 53), probeTimeout); id != "p1" {
		t.Fatalf("probe: %q, %v", id, err)
	}
	entries := func() string { return w.o.Appctl("dpctl/dump-conntrack", fmt.Sprintf("zone=%d", w.opts.CtZone)) }
	if !strings.Contains(entries(), "reply=(src=10.244.1.5,") {
		t.Fatalf("no conntrack entry towards p1:\n%s", entries())
	}
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "dns-1", "dns", v4, SlicePort("dns", udp, 5353), onNode1(p2IP4.String()))))
	w.apply()
	if e := entries(); strings.Contains(e, "reply=(src=10.244.1.5,") {
		t.Fatalf("the entry towards the removed endpoint survived:\n%s", e)
	}
	if id, err := ovstest.ProbeUDP(w.client.NS, netip.Addr{}, ap("10.96.0.53", 53), probeTimeout); id != "p2" {
		t.Fatalf("after the change: %q, %v", id, err)
	}
}

func TestPodsAreLearnedFromOVSDB(t *testing.T) {
	w := newWorld(t)
	late := netip.MustParseAddr("10.244.1.9")
	w.tr.UpsertService(object.ServiceOf(Service("ns", "late", ClusterIPs("10.96.0.70"), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "late-1", "late", v4, SlicePort("http", tcp, 8080), onNode1(late.String()))))
	w.sync()
	p := w.n.AddPod(t, "p3", late)
	ovstest.ServeTCP(t, p.NS, 8080, "p3")
	deadline := time.Now().Add(10 * time.Second)
	for {
		id, err := ovstest.ProbeTCP(w.client.NS, netip.Addr{}, ap("10.96.0.70", 80), 300*time.Millisecond)
		if id == "p3" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new pod was never reached: %q, %v", id, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestStartRefusesBadBridgesAndSockets(t *testing.T) {
	o := ovstest.Start(t)
	o.Vsctl("add-br", "br-old", "--", "set", "bridge", "br-old", "datapath_type=netdev", "protocols=OpenFlow13")
	base := func() Options {
		var opts Options
		opts.AddFlags(newFlagSet())
		opts.RunDir, opts.DatapathType, opts.ConnectTimeout = o.Dir, "netdev", 5*time.Second
		opts.HostNetNS = "/var/run/netns/" + o.NS // never this machine's own
		opts.NodeFile = filepath.Join(o.Dir, "node.json")
		return opts
	}
	cases := []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"bridge without OpenFlow15", func(o *Options) { o.Bridge = "br-old" }, "does not enable OpenFlow15"},
		{"missing OVS socket", func(o *Options) { o.RunDir = "/nonexistent" }, "OVSDB socket"},
		{"bad node IP", func(o *Options) { o.NodeIPs = []string{"10.0.0.300"} }, "--ovs-node-ips"},
		{"unknown encapsulation", func(o *Options) { o.Encap = "gre" }, "--ovs-encap"},
		{"relative node file", func(o *Options) { o.NodeFile = "node.json" }, "--ovs-node-file"},
		{"virtual IP that a network may use", func(o *Options) { o.VirtualIPs = []string{"8.8.8.8"} }, "virtual address 8.8.8.8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := base()
			tc.mod(&opts)
			_, err := newDriver(context.Background(), opts, dataplanes.Env{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

var _ = errors.New

// TestASecondInstanceIsRefused: two switchyards on one bridge would each
// delete the other's flows; the second is refused, naming the first, and
// can start once the first has stopped.
func TestASecondInstanceIsRefused(t *testing.T) {
	w := newWorld(t)
	tr := w.tr
	tr.UpsertService(object.ServiceOf(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", tcp, 80, 0))))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "web-1", "web", v4, SlicePort("http", tcp, 8080), onNode1(p1IP4.String()))))
	w.sync()
	before := ourFlows(w)
	_, err := newDriver(context.Background(), w.opts, dataplanes.Env{})
	if err == nil || !errors.Is(err, instancelock.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second driver: %v, want a refusal naming pid %d", err, os.Getpid())
	}
	if after := ourFlows(w); len(after) != len(before) {
		t.Fatalf("the refused driver changed the flows: %d -> %d", len(before), len(after))
	}
	w.d.Close()
	w.start() // the lock was released with the first driver
	w.sync()
}

// TestOVSDBRestartIsSurvived: ovsdb-server restarting does not touch the
// flows (traffic goes on throughout), and the driver's OVSDB session comes
// back by itself: a pod plugged in after the restart is learned and
// reached. The time until then is logged.
func TestOVSDBRestartIsSurvived(t *testing.T) {
	w := newWorld(t)
	webService(w)
	late := netip.MustParseAddr("10.244.1.9")
	w.tr.UpsertService(object.ServiceOf(Service("ns", "late", ClusterIPs("10.96.0.71"), Port("http", tcp, 80, 0))))
	w.tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", "late-1", "late", v4, SlicePort("http", tcp, 8080), onNode1(late.String()))))
	w.sync()
	flows := len(ourFlows(w))
	w.o.RestartDB()
	up := time.Now()
	if id, err := ovstest.ProbeTCP(w.client.NS, netip.Addr{}, ap("10.96.0.10", 80), probeTimeout); id != "p1" {
		t.Fatalf("traffic during the OVSDB restart: %q, %v", id, err)
	}
	p := w.n.AddPod(t, "p3", late)
	ovstest.ServeTCP(t, p.NS, 8080, "p3")
	for {
		id, err := ovstest.ProbeTCP(w.client.NS, netip.Addr{}, ap("10.96.0.71", 80), 300*time.Millisecond)
		if id == "p3" {
			break
		}
		if time.Since(up) > 30*time.Second {
			t.Fatalf("a pod added after ovsdb-server restarted was never reached: %q, %v", id, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("a pod added after the OVSDB restart was reached %v after ovsdb-server was back", time.Since(up).Round(time.Millisecond))
	if got := len(ourFlows(w)); got < flows {
		t.Fatalf("%d flows after the OVSDB restart, %d before", got, flows)
	}
	w.sync() // a full resync after the restart works on the new session
}
