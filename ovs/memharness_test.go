package ovs

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// memDriver is the driver's OpenFlow side on an in-memory bridge, fed by
// a tracker as the runner feeds the driver: the model (graph to flows and
// groups), bridgeFlows (read back, commit) and the driver's reports, as
// Driver.Sync and Apply run them, without the host's routes and nftables
// and without OVSDB (the pods' ports: the tests set the gateway and
// tunnel ports as render does). Those need root; every flow and group the
// driver sends goes through here as it goes to OVS.
type memDriver struct {
	t     *testing.T
	br    *ofconn.MemBridge
	tr    *tracker.Tracker
	m     *model
	conn  *ofconn.Conn
	flows *bridgeFlows
	d     *Driver // for its reports only
	sink  *problemLog
	clock *testingclock.FakeClock // the holds' backoff
}

// newMemDriver starts a driver (as a switchyard process starting) on br,
// fed by tr.
func newMemDriver(t *testing.T, br *ofconn.MemBridge, tr *tracker.Tracker) *memDriver {
	t.Helper()
	m := testModel(t)
	conn := ofconn.InMemory(br)
	t.Cleanup(conn.Close)
	sink := &problemLog{}
	flows := newBridgeFlows(conn, m.st, nil)
	clock := testingclock.NewFakeClock(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	flows.holds.Now = clock.Now
	return &memDriver{t: t, br: br, tr: tr, m: m, conn: conn, sink: sink, flows: flows, clock: clock,
		d: &Driver{model: m, flows: flows, problems: dataplanes.NewOnce(dataplanes.Env{Problems: sink}), said: map[string]bool{}}}
}

// sync is Driver.Sync's OpenFlow side for the tracker's whole graph. A
// dataplanes.Degraded is returned with the graph taken, as the runner
// takes it.
func (md *memDriver) sync() error {
	b := md.tr.Next(true)
	md.m.sync(b.Snapshot)
	if err := md.flows.sync(context.Background()); err != nil {
		return err
	}
	md.tr.Commit(b)
	return md.report()
}

// apply is Driver.Apply's OpenFlow side for what changed in the tracker
// (the same delta again after a failure: the tracker keeps it pending).
func (md *memDriver) apply() error {
	b := md.tr.Next(false)
	md.m.apply(b.Delta)
	if err := md.flows.commit(context.Background()); err != nil {
		return err
	}
	md.tr.Commit(b)
	return md.report()
}

func (md *memDriver) report() error {
	md.d.reportHeldLocked()
	md.d.reportClamped()
	md.d.reportShadowed()
	md.d.reportCollided()
	return md.d.degradedLocked()
}

// later moves the clock the driver's backoff reads by d.
func (md *memDriver) later(d time.Duration) { md.clock.Step(d) }

// mustSync and mustApply fail the test on an error.
func (md *memDriver) mustSync() {
	md.t.Helper()
	if err := md.sync(); err != nil {
		md.t.Fatal(err)
	}
}

func (md *memDriver) mustApply() {
	md.t.Helper()
	if err := md.apply(); err != nil {
		md.t.Fatal(err)
	}
}

// converged fails the test unless the bridge holds exactly what the
// driver wants: every desired flow (but those shadowed by another with
// their match) and group, and nothing else.
func (md *memDriver) converged() {
	md.t.Helper()
	if got, want := md.br.Dump(), desiredDump(md.m.st); got != want {
		md.t.Fatalf("the bridge holds:\n%s\nthe driver wants:\n%s", got, want)
	}
	if d := md.br.Dangling(); len(d) > 0 {
		md.t.Fatalf("groups send to groups the bridge does not hold: %v", d)
	}
}

// desiredDump is what the state wants installed, as MemBridge.Dump lists
// it.
func desiredDump(st *state) string {
	type line struct {
		table    uint8
		priority uint16
		text     string
	}
	var flows []line
	rendered := map[string]rendering{}
	for c := range st.flows {
		if st.shadowed[c] == 0 {
			f := st.flowOf(c, rendered)
			flows = append(flows, line{f.Table, f.Priority, ofconn.FlowDumpText(f)})
		}
	}
	slices.SortFunc(flows, func(a, b line) int {
		if a.table != b.table {
			return int(a.table) - int(b.table)
		}
		if a.priority != b.priority {
			return int(b.priority) - int(a.priority)
		}
		return strings.Compare(a.text, b.text)
	})
	var sb strings.Builder
	for _, f := range flows {
		sb.WriteString(f.text + "\n")
	}
	ids := make([]uint32, 0, len(st.groups))
	for id := range st.groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		sb.WriteString(ofconn.GroupDumpText(st.groupOf(id, rendered)) + "\n")
	}
	return sb.String()
}

// mods is what the bridge committed between two counts.
func mods(before, after ofconn.MemCounts) ofconn.MemCounts {
	return ofconn.MemCounts{Bundles: after.Bundles - before.Bundles, FlowMods: after.FlowMods - before.FlowMods,
		GroupMods: after.GroupMods - before.GroupMods, Refused: after.Refused - before.Refused}
}

// problemLog records the problems a driver reports.
type problemLog struct {
	mu   sync.Mutex
	seen []dataplanes.Problem
}

func (l *problemLog) Problem(p dataplanes.Problem) {
	l.mu.Lock()
	l.seen = append(l.seen, p)
	l.mu.Unlock()
}

func (l *problemLog) reasons() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, p := range l.seen {
		out = append(out, p.Reason+" "+p.ServicePort.String())
	}
	return out
}

// The cluster the driver tests run: node-1 (dual-stack) and node-2, and a
// Service of each kind the pipeline treats differently.
const (
	memTCP = v1.ProtocolTCP
	memV4  = discovery.AddressTypeIPv4
	memV6  = discovery.AddressTypeIPv6
)

func onNode(n string, ip string) SliceOption { return Endpoint(ip, OnNode(n)) }

func memCluster() *tracker.Tracker {
	tr := tracker.New(tracker.Options{NodeName: "node-1", Peers: true})
	tr.UpsertNode(WithPodCIDRs(Node("node-1", "", "192.168.100.10", "fd00:100::10"), "10.244.1.0/24", "fd00:244:1::/64"))
	tr.UpsertNode(WithPodCIDRs(Node("node-2", "", "192.168.100.11", "fd00:100::11"), "10.244.2.0/24", "fd00:244:2::/64"))
	svc := func(s *v1.Service) { tr.UpsertService(object.ServiceOf(s)) }
	slice := func(s *discovery.EndpointSlice) { tr.UpsertEndpointSlice(object.EndpointSliceOf(s)) }
	http := SlicePort("http", memTCP, 8080)
	svc(Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", memTCP, 80, 0)))
	slice(Slice("ns", "web-1", "web", memV4, http, onNode("node-1", "10.244.1.5"), onNode("node-1", "10.244.1.6"), onNode("node-2", "10.244.2.10")))
	svc(Service("ns", "np", ClusterIPs("10.96.0.11"), Type(v1.ServiceTypeNodePort), Port("http", memTCP, 80, 30080)))
	slice(Slice("ns", "np-1", "np", memV4, http, onNode("node-1", "10.244.1.7"), onNode("node-2", "10.244.2.11")))
	svc(Service("ns", "local", ClusterIPs("10.96.0.12"), Type(v1.ServiceTypeLoadBalancer), ETPLocal, Ingress("203.0.113.7"),
		HealthCheckNodePort(30999), Port("http", memTCP, 80, 30081)))
	slice(Slice("ns", "local-1", "local", memV4, http, onNode("node-1", "10.244.1.8"), onNode("node-2", "10.244.2.12")))
	svc(Service("ns", "sticky", ClusterIPs("10.96.0.13"), ClientIPAffinity(600), Port("http", memTCP, 80, 0)))
	slice(Slice("ns", "sticky-1", "sticky", memV4, http, onNode("node-1", "10.244.1.9"), onNode("node-2", "10.244.2.13")))
	svc(Service("ns", "empty", ClusterIPs("10.96.0.14"), Port("http", memTCP, 80, 0)))
	svc(Service("ns", "dual", ClusterIPs("10.96.0.15", "fd00:96::15"), Port("http", memTCP, 80, 0)))
	slice(Slice("ns", "dual-4", "dual", memV4, http, onNode("node-1", "10.244.1.10")))
	slice(Slice("ns", "dual-6", "dual", memV6, http, onNode("node-1", "fd00:244:1::10")))
	return tr
}

// setEndpoints replaces a Service's IPv4 slice.
func setEndpoints(tr *tracker.Tracker, svc string, ips ...string) {
	opts := []SliceOption{SlicePort("http", memTCP, 8080)}
	for _, ip := range ips {
		opts = append(opts, onNode("node-1", ip))
	}
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice("ns", svc+"-1", svc, memV4, opts...)))
}
