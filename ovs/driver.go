package ovs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/hostnet"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"github.com/switchyard-proxy/switchyard/ovs/vswitchd"
	"golang.org/x/time/rate"
	"k8s.io/klog/v2"
)

// Driver programs one OVS bridge and the host's side of it. It keeps what
// it wants next to what it installed (engine.State, engine.HostModel),
// and sends the difference: one atomic OpenFlow bundle per change, then
// the host's routes and nftables. It never touches a flow without its
// cookie tag, a group outside its ID range, or a route or table of the
// host it does not own.
type Driver struct {
	opts     Options
	env      dataplanes.Env
	problems *dataplanes.ProblemReporter // where problems are said, once each
	dp       dataplane
	db       portDatabase
	conn     *ofconn.Conn
	host     hostNetwork
	limiter  *rate.Limiter
	portsCh  chan struct{}
	stop     chan struct{}
	watched  chan struct{} // closed when watchPorts has returned

	closeOnce sync.Once
	started   bool // watchPorts runs

	mu       sync.Mutex
	model    *engine.Model
	ports    engine.Ports
	adopted  bool           // the first Sync has adopted what was installed
	seenConn int            // the connection the installed view was last read on
	hostOK   bool           // the host holds the model's host side
	hostCfg  hostnet.Config // the node's side last applied
	// keepBridge: cleanup leaves the bridge (others' flows are on it).
	keepBridge bool
	mtu        int
	said       map[string]bool     // host conditions logged once (sayOnce)
	flushes    vswitchd.FlushQueue // UDP conntrack flushes to try again
	ctl        *vswitchd.Control   // ovs-vswitchd's control socket: pokes, purges, conntrack flushes
	follow     *vswitchd.Follower  // the datapath's settle after each commit
	flows      *bridgeFlows        // the OpenFlow side: read back, commit (set by connect)

	// hostMu: one call to the host at a time (d.host); taken under mu,
	// or alone by the audit (never mu inside it).
	hostMu  sync.Mutex
	hostGen uint64       // host calls made under mu; an audit's host sync taken across one is redone
	aside   *ofconn.Conn // the audit's connection (Conn.Aside)
	audit   auditRun     // the periodic audit (audit.go)
	watch   *flowWatch   // what the flow monitor reported (flowwatch.go)

	trace   tracer       // explain's ofproto/trace (TraceLive), outside mu
	rejects rejectCounts // reject packet-ins by cookie (Counters), outside mu
}

func newDriver(ctx context.Context, o Options, env dataplanes.Env) (*Driver, error) {
	return newDriverOn(ctx, o, env, openOVS)
}

// newDriverOn is newDriver on the dataplane open opens.
func newDriverOn(ctx context.Context, o Options, env dataplanes.Env, open func(context.Context, Options) (dataplane, error)) (*Driver, error) {
	ctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	d, err := openDriver(ctx, o, env, open)
	if err != nil {
		return nil, err
	}
	if err := d.start(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// openDriver checks the options and opens the dataplane (OVSDB, the
// bridge's lock, the host's network: openOVS); it changes nothing.
func openDriver(ctx context.Context, o Options, env dataplanes.Env, open func(context.Context, Options) (dataplane, error)) (*Driver, error) {
	cfg, err := o.pipelineConfig()
	if err != nil {
		return nil, err
	}
	dp, err := open(ctx, o)
	if err != nil {
		return nil, err
	}
	ctl := vswitchd.NewControl(o.RunDir)
	return &Driver{
		opts:     o,
		env:      env,
		dp:       dp,
		db:       dp.db,
		host:     dp.host,
		limiter:  rate.NewLimiter(rate.Limit(o.PacketInRate), o.PacketInRate),
		portsCh:  make(chan struct{}, 1),
		stop:     make(chan struct{}),
		watched:  make(chan struct{}),
		model:    engine.NewModel(cfg, o.Encap != EncapNone),
		said:     map[string]bool{},
		problems: dataplanes.NewProblemReporter(env),
		ctl:      ctl,
		follow:   vswitchd.NewFollower(o.RunDir, ctl),
	}, nil
}

// start makes the bridge and the driver's own ports, waits for the
// gateway port to come up, follows the bridge's ports and connects to its
// OpenFlow socket.
func (d *Driver) start(ctx context.Context) error {
	o := d.opts
	// Followed before the ports are first read: a change between that
	// read and this registration (the tunnel port plugged a moment after
	// the gateway's) would otherwise wait for the next change.
	d.db.OnChange(func() {
		select {
		case d.portsCh <- struct{}{}:
		default:
		}
	})
	if err := d.db.EnsureBridge(ctx, o.Bridge, o.DatapathType); err != nil {
		return err
	}
	if err := ensureOwnPorts(ctx, d.db, o); err != nil {
		return err
	}
	// The bridge's datapath type decides the conntrack zones' timeouts
	// and, once connected, the null SNAT: read once, here.
	dp := d.bridgeDatapathType(ctx)
	d.ensureZoneTimeouts(ctx, dp)
	// The gateway port exists once OVS has made its interface.
	for {
		if err := d.refreshPorts(ctx); err != nil {
			return err
		}
		if d.ports.GatewayPort != 0 && d.ports.GatewayMAC != nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the gateway port %s did not come up (is ovs-vswitchd running?)", o.GatewayInterface)
		case <-time.After(20 * time.Millisecond):
		}
	}
	// Opened ahead of the first change (a new connection is read by OVS a
	// main-loop pass later, see vswitchd.Follower).
	if d.dp.datapath {
		if err := errors.Join(d.follow.Open(), d.ctl.Open()); err != nil {
			klog.InfoS("Could not open ovs-vswitchd's control socket; will retry with the first change", "err", err)
		}
	}
	d.started = true
	go func() {
		defer close(d.watched)
		d.watchPorts()
	}()
	if err := d.connect(ctx); err != nil {
		return err
	}
	d.decideNullSNAT(ctx, dp)
	return nil
}

// connect dials the bridge's OpenFlow socket.
func (d *Driver) connect(ctx context.Context) error {
	d.conn = d.dp.bridge(d)
	var follow *vswitchd.Follower
	if d.dp.datapath {
		follow = d.follow
	}
	d.flows = newBridgeFlows(d.conn, d.model.State(), follow)
	d.aside = d.conn.Aside()
	d.flows.metrics.register(d.env.Metrics, d.conn)
	d.watch = newFlowWatch()
	d.watch.register(d.env.Metrics)
	d.conn.WatchFlows(d.watch.changed)
	if err := d.conn.WaitReady(ctx); err != nil {
		return fmt.Errorf("%w (does the bridge %s exist, and is ovs-vswitchd running?)", err, d.opts.Bridge)
	}
	return nil
}

// Connected implements ofconn.Handler: after every reconnection (an
// ovs-vswitchd restart loses everything), the next round reads the
// bridge and the host back and brings both to the desired state; it asks
// the runner for that round. A connection whose state was already read
// (by the first Sync) needs nothing.
func (d *Driver) Connected(n int) {
	d.mu.Lock()
	if !d.adopted || n <= d.seenConn {
		d.mu.Unlock()
		return
	}
	// A restarted ovs-vswitchd made the gateway interface anew (with no
	// addresses, and the routes through it gone): the host is read back
	// too.
	d.seenConn, d.flows.unsure, d.hostOK = n, true, false
	d.mu.Unlock()
	klog.InfoS("Reconnected to the bridge; its flows and the host will be read back and repaired", "bridge", d.opts.Bridge)
	d.env.Request()
}

func (d *Driver) dump(ctx context.Context) ([]ofconn.FlowInfo, []ofconn.GroupInfo, error) {
	d.seenConn = d.conn.Connections()
	return d.flows.dump(ctx)
}

// Apply implements dataplanes.Driver. Like Sync, it returns a
// dataplanes.Degraded while parts the switch refused are held back.
func (d *Driver) Apply(ctx context.Context, delta graph.Delta) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	stale := d.model.Apply(delta)
	return d.roundLocked(ctx, false, stale)
}

// roundLocked adopts what a finished audit read (audit.go), sends what
// changed as one atomic bundle (and the held owners that are due; all of
// them when all is set), waits for the datapath to follow it (settle),
// then brings the host along, tells switchyard-cni which pods are
// programmed, and says what is held back.
func (d *Driver) roundLocked(ctx context.Context, all bool, stale []graph.Endpoint) error {
	d.adoptAuditLocked()
	if err := d.flows.round(ctx, all); err != nil {
		return err
	}
	d.reportHeldLocked()
	d.markProgrammedLocked(ctx) // a pod needs its own flows, not the host's
	if err := d.syncHostLocked(ctx); err != nil {
		return err
	}
	return d.reportLocked(ctx, stale)
}

// reportLocked says what the switch clamped, shadowed or left out, flushes
// the stale endpoints' UDP conntrack entries, and returns what is held
// back (dataplanes.Degraded) or nil.
func (d *Driver) reportLocked(ctx context.Context, stale []graph.Endpoint) error {
	d.reportClamped()
	d.reportShadowed()
	d.reportCollided()
	d.flushUDP(ctx, stale)
	return d.degradedLocked()
}

// Cleanup implements dataplanes.Driver: every flow with the driver's
// cookie tag (learned ones included) and every group in its range, in one
// bundle; then the rest it and switchyard-cni put on the node
// (cleanupNode).
func (d *Driver) Cleanup(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	foreign := false
	if d.conn != nil {
		var err error
		foreign, err = d.foreignState(ctx)
		errs = append(errs, err, d.deleteFlowsAndGroups(ctx))
	}
	d.keepBridge = foreign
	errs = append(errs, d.cleanupNode(ctx))
	d.hostOK = false
	if err := errors.Join(errs...); err != nil {
		return err
	}
	klog.InfoS("Removed switchyard's flows, groups, ports, routes, nftables table and CNI files", "bridge", d.opts.Bridge)
	return nil
}

// foreignState reports whether flows or groups of another controller are
// on the bridge (then the bridge stays after cleanup).
func (d *Driver) foreignState(ctx context.Context) (bool, error) {
	flows, err := d.conn.DumpFlows(ctx, 0, 0, 0)
	if err != nil {
		return false, err
	}
	for _, f := range flows {
		if f.Cookie&of.CookieTagMask != of.CookieTag {
			return true, nil
		}
	}
	_, groups, err := d.dump(ctx)
	if err != nil {
		return false, err
	}
	for _, g := range groups {
		if !d.model.State().OwnsGroup(g.ID) {
			return true, nil
		}
	}
	return false, nil
}

func (d *Driver) deleteFlowsAndGroups(ctx context.Context) error {
	_, groups, err := d.dump(ctx)
	if err != nil {
		return err
	}
	b := &ofconn.Batch{FlowDeletes: []ofconn.CookieMatch{{Cookie: of.CookieTag, Mask: of.CookieTagMask}}}
	for _, g := range groups {
		if d.model.State().OwnsGroup(g.ID) {
			b.GroupDeletes = append(b.GroupDeletes, g.ID)
		}
	}
	return d.conn.Commit(ctx, b, nil)
}

// Close implements dataplanes.Driver; the bridge and the host keep their
// state. Closing twice is fine.
func (d *Driver) Close() error {
	d.closeOnce.Do(func() {
		close(d.stop)
		if d.conn != nil {
			d.conn.Close() // ends a commit a call under way may be waiting on
		}
		if d.started {
			<-d.watched
		}
		d.audit.wg.Wait() // its context ends with stop
		// A call under way (a round the driver asked for, still running
		// when its caller closes) ends first: the connection is closed, so
		// it ends soon.
		d.mu.Lock()
		defer d.mu.Unlock()
		d.follow.Close()
		d.ctl.Close()
		d.trace.close()
		d.db.Close()
		d.host.Close()
		if d.dp.lock != nil {
			d.dp.lock.Release()
		}
	})
	return nil
}
