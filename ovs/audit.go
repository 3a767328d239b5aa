package ovs

import (
	"context"
	"runtime"
	"runtime/trace"
	"slices"
	"sync"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/hostnet"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"k8s.io/klog/v2"
)

// The periodic resync, off the change path.
//
// A full Sync reads the bridge and the host back under the driver's lock:
// ~170 ms at 10k Services, during which a change waits (docs/scale.md).
// Resync, which the runner calls for its periodic full syncs, instead
// takes what changed since the last call and commits it, as Apply does,
// and starts an audit: a goroutine that copies the installed view and the
// model's host side a slice at a time under the driver's lock, then,
// without it, reads the bridge over a connection of its own (Conn.Aside),
// in slices OVS answers one at a time so a change's bundle is taken
// between two, and brings the host to its copy. When it is
// done it asks the runner for a round; that round adopts what it read,
// except what commits changed meanwhile (engine.State.EndAudit), and
// repairs the rest in its bundle. A failed audit makes that round read
// the bridge back in full, as after a lost bundle. An audit reads the
// bridge only when the flow monitor says it may differ, or an hour after
// the last that did (flowwatch.go); the others sync the host alone.

// auditSlice is how many entries an audit copies under the driver's lock
// at a time (copyForAudit); auditTimeout bounds one audit;
// auditCountTimeout its count of the bridge's flows; auditCountTries is
// how many counts it takes outside the driver's lock before one under it
// (countUnread). auditIdle: an audit starts only when the last one ended
// at least auditIdle times as long ago as it took, so that audits keep to
// a sixth of the time however short --sync-period is against their cost,
// which grows with the cluster (~3 s at 30k Services, ~10 s at 100k,
// docs/scale.md); a resync between commits what changed all the same.
const (
	auditSlice        = 4096
	auditTimeout      = 2 * time.Minute
	auditCountTimeout = 10 * time.Second
	auditCountTries   = 3
	auditIdle         = 5
)

// auditRun is the audit's state, under the driver's mu (wg aside).
type auditRun struct {
	running bool
	result  *auditResult // read, not yet adopted
	slice   int          // auditSlice unless set (tests)
	// ended and took are the last audit's end and length (auditIdle);
	// bridgeRead is when the last adopted audit that read the bridge
	// began (flowwatch.go).
	ended      time.Time
	took       time.Duration
	bridgeRead time.Time
	// spareSide is the last audit's copy of the host side, whose arrays
	// the next one copies into: touched only by the audit's goroutine,
	// one audit at a time (running, set and cleared under mu).
	spareSide engine.HostSide
	wg        sync.WaitGroup
	// hook, when set (tests), runs in the audit as it begins ("begin"),
	// between two slices of its copy ("copying", without the lock), once
	// it has copied ("copied"), between its flow lookups and its count
	// ("looked up"), between its reads and their handing over ("read"),
	// and once they are handed over ("done").
	hook func(stage string)
}

// auditResult is where what an audit read differs from the installed
// view as it began, and how its host sync went.
type auditResult struct {
	bridge  bool // it read the bridge (flowwatch.go), not only synced the host
	drift   engine.AuditDrift
	err     error
	hostGen uint64 // the host calls made before its host sync's copy
	hostErr error
	began   time.Time
	took    time.Duration
	parts   auditParts
}

// auditParts is how long each part of an audit took, for its log line:
// the copy under the driver's lock, the bridge's flows and groups read
// aside, and the host's sync.
type auditParts struct {
	copy, flows, groups, host time.Duration
}

// hostCopy is the model's host side as an audit brings the host to it.
type hostCopy struct {
	cfg   hostnet.Config
	side  engine.HostSide
	gen   uint64
	sizes engine.HostSizes // as the audit began
}

// Resync implements dataplanes.Auditor: it applies the delta and commits
// what changed, as Apply does, and starts an audit. While what the bridge
// or the host holds is not known for sure (a lost bundle, a
// reconnection, a failed host call) it reads them back at once instead,
// as Sync does for the model it holds.
func (d *Driver) Resync(ctx context.Context, delta graph.Delta) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	stale := d.model.Apply(delta)
	if !d.adopted || d.flows.unsure || !d.hostOK {
		return d.syncLocked(ctx, stale, nil)
	}
	err := d.roundLocked(ctx, true, stale)
	d.startAuditLocked()
	return err
}

// startAuditLocked starts an audit unless one is running or waits to be
// adopted, or the last one ended too recently (auditIdle). What it costs
// under the lock is O(1): the audit copies what it compares against
// itself (copyForAudit).
func (d *Driver) startAuditLocked() {
	if d.audit.running || d.audit.result != nil || d.aside == nil {
		return
	}
	if !d.audit.ended.IsZero() && time.Since(d.audit.ended) < auditIdle*d.audit.took {
		klog.V(4).InfoS("Periodic audit deferred: the last one ended too recently", "bridge", d.opts.Bridge,
			"ended", time.Since(d.audit.ended), "took", d.audit.took)
		return
	}
	var view *engine.AuditView // nil: the host only
	if d.bridgeAuditDueLocked() {
		view = d.model.State().BeginAudit()
	}
	h := hostCopy{cfg: d.hostCfg, gen: d.hostGen, sizes: d.model.Host().Sizes()}
	d.audit.running = true
	d.audit.wg.Add(1)
	go func() {
		defer d.audit.wg.Done()
		r := d.runAudit(view, h)
		d.auditStage("read")
		d.mu.Lock()
		d.audit.running, d.audit.result = false, r
		d.audit.ended, d.audit.took = time.Now(), r.took
		d.mu.Unlock()
		d.auditStage("done")
		d.env.Request()
	}()
}

// copyForAudit fills the audit's view of the installed flows and groups
// (when it reads the bridge: view not nil) and its copy of the model's
// host side under the driver's lock, a slice
// of auditSlice entries at a time: a change waits for one slice, not for
// the whole copy (docs/scale.md has both). Room for the copies is made
// first, without the lock. It reports false when the audit was dropped
// meanwhile (a full read-back).
func (d *Driver) copyForAudit(view *engine.AuditView, h *hostCopy) bool {
	if view != nil {
		view.Reserve()
	}
	h.side = engine.ReservedSide(h.sizes, d.audit.spareSide)
	d.mu.Lock()
	defer d.mu.Unlock()
	p := &engine.Pause{Every: d.audit.slice, Yield: func() {
		d.mu.Unlock()
		d.auditStage("copying")
		runtime.Gosched() // a change waiting for the lock takes it first
		d.mu.Lock()
	}}
	if p.Every == 0 {
		p.Every = auditSlice
	}
	if view != nil && !view.Fill(p) {
		return false
	}
	h.side = d.model.Host().Side(d.model.RoutesFrontend, p, h.side)
	return true
}

// runAudit copies what it compares against, reads the bridge and
// compares (view not nil), then syncs the host, without the driver's
// lock.
func (d *Driver) runAudit(view *engine.AuditView, h hostCopy) *auditResult {
	ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
	defer cancel()
	go func() {
		select {
		case <-d.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	defer trace.StartRegion(ctx, "ovs audit").End() // in an execution trace (--trace-slow-changes)
	d.auditStage("begin")
	start := time.Now()
	r := &auditResult{bridge: view != nil, hostGen: h.gen, began: start}
	if !d.copyForAudit(view, &h) {
		r.took = time.Since(start)
		return r // dropped: nothing to adopt (EndAudit), the host left to the full sync that dropped it
	}
	d.auditStage("copied")
	h.side.Sort()
	mark := start
	lap := func(part *time.Duration) {
		now := time.Now()
		*part, mark = now.Sub(mark), now
	}
	if view != nil {
		view.Prepare() // sorted here, not under the lock
		lap(&r.parts.copy)
		d.readBridge(ctx, view, r, lap)
	} else {
		lap(&r.parts.copy)
	}
	// After the bridge, not alongside: the audit paces itself, so that a
	// change in between finds the CPUs (two here) free. Not when a commit
	// called the host since the copy began: the copy may miss what it
	// did, and the round that adopts this audit syncs the host in full
	// (its generation differs). hostGen changes under hostMu too.
	d.hostMu.Lock()
	if d.hostGen == h.gen {
		r.hostErr = d.host.Audit(ctx, h.cfg, h.side.Frontends, h.side.Captures, h.side.NodePorts)
	}
	d.hostMu.Unlock()
	lap(&r.parts.host)
	d.audit.spareSide = h.side // the host kept none of it (hostNetwork.Audit)
	r.took = time.Since(start)
	return r
}

// readBridge reads the bridge's flows and groups aside and compares them
// with the view, into r.
func (d *Driver) readBridge(ctx context.Context, view *engine.AuditView, r *auditResult, lap func(*time.Duration)) {
	flows, err := d.auditFlows(ctx, view)
	lap(&r.parts.flows)
	var groups []ofconn.GroupInfo
	if err == nil {
		groups, err = groupsAside(ctx, d.aside, view.IDs)
	}
	lap(&r.parts.groups)
	if r.err = err; err == nil {
		r.drift = view.Compare(flows, groups)
	}
}

// auditFlows reads the bridge's pipeline flows: those of the view's
// cookies, looked up; then, when a count of every pipeline flow says
// the bridge holds others, all of them.
func (d *Driver) auditFlows(ctx context.Context, view *engine.AuditView) ([]ofconn.FlowInfo, error) {
	flows, err := lookUpAside(ctx, d.aside, view.Cookies)
	if err != nil {
		return nil, err
	}
	pipeline, mask := of.PipelineCookies()
	found := make([]uint64, 0, len(flows))
	for _, f := range flows {
		if f.Cookie&mask == pipeline {
			found = append(found, f.Cookie)
		}
	}
	slices.Sort(found)
	d.auditStage("looked up")
	count, unread, ok, err := d.countUnread(ctx, found)
	if err != nil {
		return nil, err
	}
	if !ok || unread == 0 {
		return flows, nil
	}
	klog.V(2).InfoS("The bridge holds flows the audit did not look up; reading every one", "bridge", d.opts.Bridge, "unread", unread)
	return scanAside(ctx, d.aside, count)
}

// countUnread counts the bridge's pipeline flows and works out how many
// the audit did not find (engine.State.AuditUnread). OVS visits every
// flow to count them (~57 ms of its CPU at 200k flows), so the count is
// taken outside the driver's lock, and kept only when no bundle was sent
// while OVS counted (the driver's sends unchanged across it); after
// auditCountTries counts that bundles overlapped, the last is taken under
// the lock.
func (d *Driver) countUnread(ctx context.Context, found []uint64) (count, unread int, ok bool, err error) {
	pipeline, mask := of.PipelineCookies()
	countCtx, cancel := context.WithTimeout(ctx, auditCountTimeout)
	defer cancel()
	for try := 1; ; try++ {
		locked := try > auditCountTries
		d.mu.Lock()
		sends := d.flows.sends
		if !locked {
			d.mu.Unlock()
		}
		count, err = d.aside.CountFlows(countCtx, pipeline, mask)
		if !locked {
			d.mu.Lock()
		}
		quiet := d.flows.sends == sends
		if err == nil && quiet {
			unread, ok = d.model.State().AuditUnread(count, found)
		}
		d.mu.Unlock()
		if err != nil || quiet {
			return count, unread, ok, err
		}
	}
}

// adoptAuditLocked adopts a finished audit's reads. The host is synced
// again in full by this round when the audit's host sync failed, or when
// a commit called the host after the audit copied the model's host side
// (the audit may have undone it).
func (d *Driver) adoptAuditLocked() {
	r := d.audit.result
	if r == nil {
		return
	}
	d.audit.result = nil
	d.flows.metrics.audited(r.took, r.err != nil || r.hostErr != nil)
	if r.err != nil {
		klog.ErrorS(r.err, "The periodic audit could not read the bridge; reading it back in full", "bridge", d.opts.Bridge)
		d.flows.unsure = true
	} else if r.bridge {
		d.flows.adoptAudit(r.drift)
		d.audit.bridgeRead = r.began
	}
	if r.hostErr != nil || r.hostGen != d.hostGen {
		if r.hostErr != nil {
			klog.ErrorS(r.hostErr, "The periodic audit could not sync the host; syncing it in full")
		}
		d.hostOK = false
	}
	// At --v=2, as each full sync's parts: when an audit ran is what a
	// change's latency meanwhile needs to be read beside (the scale
	// benchmark does).
	klog.V(2).InfoS("Periodic audit adopted", "began", r.began.UTC().Format(time.RFC3339Nano), "took", r.took, "drift", r.drift.Len(),
		"copy", r.parts.copy, "flows", r.parts.flows, "groups", r.parts.groups, "host", r.parts.host, "bridge", r.bridge)
}

// auditStage runs the tests' hook, if any.
func (d *Driver) auditStage(stage string) {
	if d.audit.hook != nil {
		d.audit.hook(stage)
	}
}
