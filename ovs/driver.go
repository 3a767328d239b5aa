package ovs

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"sync"
	"time"

	"antrea.io/libOpenflow/openflow15"
	"antrea.io/libOpenflow/util"
	"antrea.io/ofnet/ofctrl"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
	"golang.org/x/time/rate"
	"k8s.io/klog/v2"
)

// Driver programs one OVS bridge. It keeps what it wants next to what it
// installed (state), and sends the difference as one atomic bundle per
// change. It never touches a flow without its cookie tag, or a group
// outside its ID range.
type Driver struct {
	opts    Options
	env     dataplanes.Env // where problems are reported
	lock    *bridgeLock
	db      *ovsdb.Client
	conn    *ofconn.Conn
	limiter *rate.Limiter
	portsCh chan struct{}
	stop    chan struct{}

	closeOnce sync.Once

	mu       sync.Mutex
	model    *model
	adopted  bool // the first Sync has adopted what was installed
	seenConn int  // the connection the installed view was last read on
	reported map[graph.ServicePortName]bool
	// The last non-empty commit: until OVS confirmed the bundle, and
	// until its revalidators had run (settle). Read by benchmarks.
	lastCommit, lastSettle time.Duration
}

func newDriver(ctx context.Context, o Options) (*Driver, error) {
	cfg, err := o.pipelineConfig()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	db, err := ovsdb.Connect(ctx, filepath.Join(o.RunDir, "db.sock"))
	if err != nil {
		return nil, err
	}
	// Before touching anything: one switchyard per bridge.
	lock, err := lockBridge(o.RunDir, o.Bridge)
	if err != nil {
		db.Close()
		return nil, err
	}
	if err := db.EnsureBridge(ctx, o.Bridge, o.DatapathType); err != nil {
		db.Close()
		lock.release()
		return nil, err
	}
	d := &Driver{
		opts:     o,
		lock:     lock,
		db:       db,
		limiter:  rate.NewLimiter(rate.Limit(o.PacketInRate), o.PacketInRate),
		portsCh:  make(chan struct{}, 1),
		stop:     make(chan struct{}),
		model:    newModel(cfg),
		reported: map[graph.ServicePortName]bool{},
	}
	if err := d.refreshPorts(ctx); err != nil {
		db.Close()
		lock.release()
		return nil, err
	}
	db.OnChange(func() {
		select {
		case d.portsCh <- struct{}{}:
		default:
		}
	})
	go d.watchPorts()
	d.conn = ofconn.Dial(filepath.Join(o.RunDir, o.Bridge+".mgmt"), d)
	if err := d.conn.WaitReady(ctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("%w (does the bridge %s exist, and is ovs-vswitchd running?)", err, o.Bridge)
	}
	return d, nil
}

// refreshPorts reads the bridge's interfaces: the uplink and the pods.
func (d *Driver) refreshPorts(ctx context.Context) error {
	ifaces, err := d.db.Interfaces(ctx, d.opts.Bridge)
	if err != nil {
		return err
	}
	uplink, pods, problems := portsFromInterfaces(ifaces, d.opts.UplinkPort)
	for _, p := range problems {
		klog.ErrorS(nil, "Ignoring a port whose external_ids are unusable", "problem", p)
	}
	if d.opts.UplinkPort != "" && uplink == 0 {
		klog.InfoS("Uplink port not on the bridge yet; traffic for other nodes is dropped until it is", "port", d.opts.UplinkPort)
	}
	d.mu.Lock()
	d.model.setUplink(uplink)
	d.model.setPods(pods)
	d.mu.Unlock()
	return nil
}

// watchPorts follows OVSDB changes (pods coming and going) and commits
// them; a failure is retried by the next change, batch or resync.
func (d *Driver) watchPorts() {
	for {
		select {
		case <-d.stop:
			return
		case <-d.portsCh:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := d.refreshPorts(ctx); err != nil {
			klog.ErrorS(err, "Reading the bridge's ports failed")
		} else {
			d.mu.Lock()
			if d.adopted {
				if err := d.commitLocked(ctx); err != nil {
					klog.ErrorS(err, "Programming port changes failed; will retry")
				}
			}
			d.mu.Unlock()
		}
		cancel()
	}
}

// Connected implements ofconn.Handler: after every reconnection, the
// bridge is compared with the desired state and brought back to it (after
// an ovs-vswitchd restart that replays everything). A connection whose
// state was already read (by the first Sync) needs nothing.
func (d *Driver) Connected(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.adopted || n <= d.seenConn {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	if err := d.reconcileLocked(ctx); err != nil {
		klog.ErrorS(err, "Re-programming the bridge after reconnecting failed; the next resync retries")
		return
	}
	klog.InfoS("Bridge re-programmed after reconnecting", "bridge", d.opts.Bridge, "elapsed", time.Since(start))
}

// reconcileLocked reads what is installed and commits the difference.
func (d *Driver) reconcileLocked(ctx context.Context) error {
	flows, groups, err := d.dump(ctx)
	if err != nil {
		return err
	}
	d.model.st.adopt(flows, groups)
	return d.commitLocked(ctx)
}

func (d *Driver) dump(ctx context.Context) ([]ofconn.FlowInfo, []ofconn.GroupInfo, error) {
	d.seenConn = d.conn.Connections()
	flows, err := d.conn.DumpFlows(ctx, of.CookieTag, of.CookieTagMask)
	if err != nil {
		return nil, nil, fmt.Errorf("reading installed flows: %w", err)
	}
	groups, err := d.conn.DumpGroups(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("reading installed groups: %w", err)
	}
	return flows, groups, nil
}

// commitLocked sends what changed as one atomic bundle, and waits for the
// datapath to follow it (settle).
func (d *Driver) commitLocked(ctx context.Context) error {
	start := time.Now()
	b, err := d.model.st.pending()
	if err != nil {
		return err
	}
	if err := d.conn.Commit(b); err != nil {
		return err
	}
	d.model.st.committed()
	if b.Len() > 0 {
		d.lastCommit = time.Since(start)
		settled := time.Now()
		if err := d.settle(ctx); err != nil {
			klog.InfoS("Could not wait for the datapath to take the new flows; cached datapath flows may serve the old state briefly", "err", err)
		}
		d.lastSettle = time.Since(settled)
	}
	return nil
}

// Sync implements dataplanes.Driver. The first one adopts what an earlier
// run installed: unchanged flows and groups stay untouched.
func (d *Driver) Sync(ctx context.Context, s graph.Snapshot) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	flows, groups, err := d.dump(ctx)
	if err != nil {
		return err
	}
	stale := d.model.sync(s)
	d.model.st.adopt(flows, groups)
	if err := d.commitLocked(ctx); err != nil {
		return err
	}
	d.adopted = true
	d.reportClamped()
	d.flushUDP(ctx, stale)
	return nil
}

// Apply implements dataplanes.Driver.
func (d *Driver) Apply(ctx context.Context, delta graph.Delta) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	stale := d.model.apply(delta)
	if err := d.commitLocked(ctx); err != nil {
		return err
	}
	d.reportClamped()
	d.flushUDP(ctx, stale)
	return nil
}

// reportClamped says once per service port that its affinity timeout was
// cut to what OVS can hold.
func (d *Driver) reportClamped() {
	for n := range d.model.clamped {
		if !d.reported[n] {
			d.reported[n] = true
			requested := d.model.sps[n].SessionAffinity.TimeoutSeconds
			klog.InfoS("Session affinity timeout clamped: OVS learned flows time out after at most 65535 s",
				"servicePort", n.String(), "requested", requested)
			d.env.Report(dataplanes.Problem{ServicePort: n, Reason: "AffinityTimeoutClamped",
				Message: fmt.Sprintf("sessionAffinityConfig.clientIP.timeoutSeconds %d: OVS holds at most 65535 s, so clients lose affinity after 65535 s idle", requested)})
		}
	}
}

// Cleanup implements dataplanes.Driver: every flow with the driver's
// cookie tag (learned ones included) and every group in its range go, in
// one bundle. The bridge and its ports stay: they may be the CNI's.
func (d *Driver) Cleanup(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, groups, err := d.dump(ctx)
	if err != nil {
		return err
	}
	b := &ofconn.Batch{FlowDeletes: []*openflow15.FlowMod{of.DeleteByCookie(of.CookieTag, of.CookieTagMask)}}
	for _, g := range groups {
		if d.model.st.alloc.owns(g.ID) {
			m, err := (&of.Group{ID: g.ID}).GroupMessage(openflow15.OFPGC_DELETE)
			if err != nil {
				return err
			}
			b.GroupDeletes = append(b.GroupDeletes, m)
		}
	}
	if err := d.conn.Commit(b); err != nil {
		return err
	}
	klog.InfoS("Removed Switchyard's flows and groups", "bridge", d.opts.Bridge, "groups", len(b.GroupDeletes))
	return nil
}

// Close implements dataplanes.Driver; the bridge keeps its state.
// Closing twice is fine.
func (d *Driver) Close() error {
	d.closeOnce.Do(func() {
		close(d.stop)
		if d.conn != nil {
			d.conn.Close()
		}
		d.db.Close()
		d.lock.release()
	})
	return nil
}

// PacketIn implements ofconn.Handler: rejects for frontends without
// endpoints, neighbour advertisements for the bridge's IPv6 addresses.
func (d *Driver) PacketIn(pkt *ofctrl.PacketIn) {
	if len(pkt.UserData) == 0 || !d.limiter.Allow() {
		return
	}
	data, err := pkt.Data.MarshalBinary()
	if err != nil {
		return
	}
	f, err := parseFrame(data)
	if err != nil {
		return
	}
	d.mu.Lock()
	cfg := d.model.cfg
	d.mu.Unlock()
	var reply []byte
	switch pkt.UserData[0] {
	case pipeline.PacketInReject:
		reply = rejectReply(f)
	case pipeline.PacketInNeighbor:
		reply = neighborAdvert(f, cfg.GatewayMAC, func(ip netip.Addr) (bool, bool) {
			for _, g := range cfg.GatewayIPs {
				if g == ip {
					return true, true
				}
			}
			for _, n := range cfg.NodeIPs {
				if n == ip {
					return true, false
				}
			}
			return false, false
		})
	}
	if reply == nil {
		return
	}
	inPort, ok := inPortOf(pkt)
	if !ok {
		return
	}
	po := openflow15.NewPacketOut()
	po.Match.AddField(*openflow15.NewInPortField(inPort))
	po.AddAction(openflow15.NewActionOutput(openflow15.P_IN_PORT))
	po.Data = util.NewBuffer(reply)
	if err := d.conn.Send(po); err != nil {
		klog.V(2).InfoS("Packet-out failed", "err", err)
	}
}

func inPortOf(pkt *ofctrl.PacketIn) (uint32, bool) {
	for _, f := range pkt.Match.Fields {
		if f.Class == openflow15.OXM_CLASS_OPENFLOW_BASIC && f.Field == openflow15.OXM_FIELD_IN_PORT {
			if p, ok := f.Value.(*openflow15.InPortField); ok {
				return p.InPort, true
			}
		}
	}
	return 0, false
}
