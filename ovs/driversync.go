package ovs

import (
	"context"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// The driver's full sync: the snapshot into the model, then the bridge
// and the host brought to it side by side.

// Sync implements dataplanes.Driver. The first one adopts what an earlier
// run installed: unchanged flows and groups stay untouched; on a bridge
// holding nothing of the driver's it programs a large snapshot in parts
// (coldsync.go). The bridge is read back and brought to the snapshot
// while, alongside, the host is (its routes and nftables depend on the
// model only, not on the bridge), as each side takes about as long as the
// other (docs/scale.md).
func (d *Driver) Sync(ctx context.Context, s graph.Snapshot) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	start := time.Now()
	phases := &syncPhases{}
	d.flows.phases = phases // the bridge's parts are timed
	defer func() { d.flows.phases = nil }()
	var err error
	if d.mayStartCold(s) {
		err = d.syncColdLocked(ctx, s, phases)
	} else {
		stale := d.model.Sync(s)
		phases.model = time.Since(start)
		err = d.syncLocked(ctx, stale, phases)
	}
	phases.log(time.Since(start))
	return err
}

// syncLocked reads the bridge and the host back and brings both to the
// model; stale are the endpoints whose UDP conntrack entries went stale.
// phases, when not nil, gets the host's time (the bridge's parts go to
// d.flows.phases, which Sync sets).
func (d *Driver) syncLocked(ctx context.Context, stale []graph.Endpoint, phases *syncPhases) error {
	return d.finishSyncLocked(ctx, stale, phases, func() error { return d.syncFlowsLocked(ctx) })
}

// finishSyncLocked brings the bridge to the model (flows) and, alongside,
// the host; then says what is held back.
func (d *Driver) finishSyncLocked(ctx context.Context, stale []graph.Endpoint, phases *syncPhases, flows func() error) error {
	d.audit.result = nil // what it read is older than this
	d.hostOK = false     // a full sync reads the host back too
	hostDone := make(chan error, 1)
	var hostTook time.Duration
	go func() {
		start := time.Now()
		err := d.syncHostLocked(ctx)
		hostTook = time.Since(start)
		hostDone <- err
	}()
	err := flows()
	herr := <-hostDone
	if phases != nil {
		phases.host = hostTook
	}
	if err != nil {
		return err
	}
	d.adopted = true
	d.reportHeldLocked()
	d.markProgrammedLocked(ctx)
	if herr != nil {
		return herr
	}
	return d.reportLocked(ctx, stale)
}

// syncFlowsLocked reads the bridge back and commits the difference.
func (d *Driver) syncFlowsLocked(ctx context.Context) error {
	d.seenConn = d.conn.Connections()
	return d.flows.sync(ctx)
}
