package ovs

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/hostnet/hostnettest"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn/ofconntest"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb/ovsdbtest"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// memDriver is the real driver (Driver.Sync and Apply, adoption, the
// pod-port path, its reports) on the in-memory dataplane: an in-memory
// bridge (ofconntest.Bridge), libovsdb's in-memory OVSDB with an
// ovs-vswitchd stand-in (ovsdbtest) and an in-memory host (hostnettest),
// fed by a tracker as the runner feeds the driver. Nothing here needs
// root; every flow and group the driver sends goes through here as it
// goes to OVS.
type memDriver struct {
	t     *testing.T
	br    *ofconntest.Bridge
	tr    *tracker.Tracker
	d     *Driver
	m     *engine.Model // d's
	conn  *ofconn.Conn  // d's
	flows *bridgeFlows  // d's
	db    *ovsdbtest.Server
	host  *hostnettest.Fake
	sink  *problemLog
	clock *testingclock.FakeClock // the holds' backoff
}

// memNode is a node's in-memory dataplane: its bridge, its OVSDB and its
// host. A driver started on a bridge again (a restarted switchyard)
// finds the same node.
type memNode struct {
	runDir string
	db     *ovsdbtest.Server
	host   *hostnettest.Fake
}

var (
	memNodesMu sync.Mutex
	memNodes   = map[*ofconntest.Bridge]*memNode{}
)

// nodeOf returns br's node, made on first use (for the test's life).
func nodeOf(t *testing.T, br *ofconntest.Bridge) *memNode {
	memNodesMu.Lock()
	defer memNodesMu.Unlock()
	if n, ok := memNodes[br]; ok {
		return n
	}
	dir := t.TempDir()
	n := &memNode{runDir: dir, db: ovsdbtest.Start(t, dir), host: &hostnettest.Fake{}}
	memNodes[br] = n
	t.Cleanup(func() {
		memNodesMu.Lock()
		delete(memNodes, br)
		memNodesMu.Unlock()
	})
	return n
}

// newMemDriver starts a driver (as a switchyard process starting) on br's
// node, fed by tr, with the test options (changed by each of with).
func newMemDriver(t *testing.T, br *ofconntest.Bridge, tr *tracker.Tracker, with ...func(*Options)) *memDriver {
	t.Helper()
	n := nodeOf(t, br)
	o := testOptions()
	for _, f := range with {
		f(&o)
	}
	// Every path the driver writes is the node's own, never the machine's.
	o.RunDir, o.NodeFile = n.runDir, filepath.Join(n.runDir, "ovs-node.json")
	o.IPAMDir, o.CNIConfDir, o.CNIBinDir = filepath.Join(n.runDir, "ipam"), filepath.Join(n.runDir, "net.d"), filepath.Join(n.runDir, "bin")
	md := &memDriver{t: t, br: br, tr: tr, db: n.db, host: n.host, sink: &problemLog{}}
	md.start(o)
	return md
}

// start makes a new driver on md's dataplane (a restarted switchyard).
func (md *memDriver) start(o Options) {
	t := md.t
	t.Helper()
	open := func(ctx context.Context, o Options) (dataplane, error) {
		db, err := ovsdb.Connect(ctx, md.db.Socket)
		if err != nil {
			return dataplane{}, err
		}
		return dataplane{db: db, host: md.host, bridge: func(ofconn.Handler) *ofconn.Conn { return ofconntest.InMemory(md.br) }}, nil
	}
	d, err := newDriverOn(context.Background(), o, dataplanes.Env{Problems: md.sink}, open)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	// The driver waited for its gateway port; the tunnel port comes the
	// same way, a moment later.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		d.mu.Lock()
		up := d.ports.TunnelPort != 0
		d.mu.Unlock()
		if up {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tunnel port never came up")
		}
	}
	md.clock = testingclock.NewFakeClock(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	d.flows.holds.Now = md.clock.Now
	md.d, md.m, md.conn, md.flows = d, d.model, d.conn, d.flows
}

// lock holds the driver's lock while a test reads or changes the driver's
// model directly: the driver's port watch writes the model under it.
func (md *memDriver) lock() (unlock func()) {
	md.d.mu.Lock()
	return md.d.mu.Unlock
}

// sync hands the tracker's whole graph to Driver.Sync. A
// dataplanes.Degraded is returned with the graph taken, as the runner
// takes it.
func (md *memDriver) sync() error {
	b := md.tr.Next(true)
	return md.taken(b, md.d.Sync(context.Background(), b.Snapshot))
}

// apply hands what changed in the tracker to Driver.Apply (the same
// delta again after a failure: the tracker keeps it pending).
func (md *memDriver) apply() error {
	b := md.tr.Next(false)
	return md.taken(b, md.d.Apply(context.Background(), b.Delta))
}

// taken commits the batch in the tracker when the runner would.
func (md *memDriver) taken(b *tracker.Batch, err error) error {
	var degraded *dataplanes.Degraded
	if err == nil || errors.As(err, &degraded) {
		md.tr.Commit(b)
	}
	return err
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
	defer md.lock()()
	if got, want := md.br.Dump(), desiredDump(md.m.State()); got != want {
		md.t.Fatalf("the bridge holds:\n%s\nthe driver wants:\n%s", got, want)
	}
	if d := md.br.Dangling(); len(d) > 0 {
		md.t.Fatalf("groups send to groups the bridge does not hold: %v", d)
	}
}

// desiredDump is what the state wants installed, as
// ofconntest.Bridge.Dump lists it.
func desiredDump(st *engine.State) string {
	type line struct {
		table    uint8
		priority uint16
		text     string
	}
	var flows []line
	rendered := map[engine.OwnerKey]engine.Rendering{}
	for _, c := range st.DesiredFlows() {
		if !st.IsShadowed(c) {
			f := st.FlowOf(c, rendered)
			flows = append(flows, line{f.Table, f.Priority, ofconntest.FlowDumpText(f)})
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
	for _, id := range st.DesiredGroups() {
		sb.WriteString(ofconntest.GroupDumpText(st.GroupOf(id, rendered)) + "\n")
	}
	return sb.String()
}

// mods is what the bridge committed between two counts.
func mods(before, after ofconntest.Counts) ofconntest.Counts {
	return ofconntest.Counts{Bundles: after.Bundles - before.Bundles, FlowMods: after.FlowMods - before.FlowMods,
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
