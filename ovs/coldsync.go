package ovs

import (
	"context"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
)

// A cold start is the first full sync of a process onto a bridge that
// holds nothing of the driver's: a new node, or one whose bridge was
// cleaned up. With many service ports it is programmed in parts: OVS
// stages and commits one part's bundle while the model builds the next,
// so the model's work (~2 s at 100k Services) runs beside OVS's instead
// of before it (docs/scale.md). Nothing installed can be lost or changed
// by a part, so one atomic bundle is given up only where there was
// nothing to keep: Services become reachable part by part, over the
// seconds the one bundle took, where before they all did at its end. A
// restart, which finds the driver's flows installed, still syncs as one
// bundle that sends nothing for an unchanged graph.
const (
	// coldPartsFrom: a snapshot with fewer service ports is one bundle.
	coldPartsFrom = 4096
	// coldFirstPart service ports make the first part, small so that OVS
	// starts early; each next part doubles, up to coldPartMax.
	coldFirstPart = 2048
	coldPartMax   = 16384
)

// coldPartEnds cuts n service ports into parts: the end of each.
func coldPartEnds(n int) []int {
	var ends []int
	for end, size := 0, coldFirstPart; end < n; size = min(2*size, coldPartMax) {
		end = min(end+size, n)
		ends = append(ends, end)
	}
	return ends
}

// mayStartCold says whether a full sync is to find out if it starts cold:
// the process's first, and large enough to be worth parts.
func (d *Driver) mayStartCold(s graph.Snapshot) bool {
	return !d.adopted && len(s.ServicePorts) >= coldPartsFrom
}

// syncColdLocked is a first full sync that reads the bridge back before
// building the model: when the bridge holds nothing of the driver's, the
// snapshot is programmed in parts (syncPartsLocked); else as one bundle,
// as any full sync.
func (d *Driver) syncColdLocked(ctx context.Context, s graph.Snapshot, phases *syncPhases) error {
	d.seenConn = d.conn.Connections()
	start := time.Now()
	if err := d.flows.readBack(ctx); err != nil {
		return err
	}
	phases.readBack = since(&start)
	st := d.model.State()
	if st.InstalledFlows() > 0 || st.InstalledGroups() > 0 {
		stale := d.model.Sync(s)
		phases.model = since(&start)
		// Read back just now: what differs goes in one round, every held
		// owner tried again.
		return d.finishSyncLocked(ctx, stale, phases, func() error { return d.flows.round(ctx, true) })
	}
	return d.syncPartsLocked(ctx, s, phases)
}

// syncPartsLocked programs a snapshot onto a bridge that holds nothing of
// the driver's, part by part (coldPartEnds): each part's model is built
// while OVS commits the one before. Each part's changes are recorded as
// committed when its bundle is built; when a bundle fails, the bridge is
// read back and the rest goes as an ordinary round would send it (with
// refused owners held back). The datapath follows once, at the end.
func (d *Driver) syncPartsLocked(ctx context.Context, s graph.Snapshot, phases *syncPhases) error {
	st := d.model.State()
	var stale []graph.Endpoint
	var inFlight chan error
	var failed error
	for _, end := range coldPartEnds(len(s.ServicePorts)) {
		start := time.Now()
		part := graph.Snapshot{Node: s.Node, Peers: s.Peers, ServicePorts: s.ServicePorts[:end]}
		stale = append(stale, d.model.Sync(part)...)
		phases.model += since(&start)
		batch := st.Pending(engine.All)
		st.Committed(engine.All)
		phases.build += since(&start)
		if inFlight != nil {
			if failed = <-inFlight; failed != nil {
				break
			}
		}
		inFlight = make(chan error, 1)
		go func(done chan<- error, batch *ofconn.Batch) { done <- d.flows.send(ctx, batch, false) }(inFlight, batch)
	}
	if failed == nil {
		failed = <-inFlight
	}
	if failed != nil {
		// What the bridge holds is read back before the next commit.
		d.flows.unsure = true
		stale = append(stale, d.model.Sync(s)...)
	}
	// Parts that went in (all of them, or some before a failure) are
	// followed here; what the round below sends, by its own settle.
	phases.settle += d.flows.settleParts(ctx)
	d.flows.metrics.installed(st)
	return d.finishSyncLocked(ctx, stale, phases, func() error { return d.flows.round(ctx, true) })
}

// settleParts has the datapath follow the parts committed without a
// settle of their own, and returns how long that took.
func (b *bridgeFlows) settleParts(ctx context.Context) time.Duration {
	if b.follow == nil {
		return 0
	}
	took := b.follow.Purge(ctx)
	b.metrics.settled(took)
	return took
}
