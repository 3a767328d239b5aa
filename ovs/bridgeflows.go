package ovs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"github.com/switchyard-proxy/switchyard/ovs/vswitchd"
)

// bridgeFlows is the driver's OpenFlow side: it reads back what the
// bridge holds and adopts it (a full sync, a reconnection), and sends
// what the state wants changed as one atomic bundle, then has the
// datapath follow it. It is all the OpenFlow I/O Sync and Apply do, over
// one connection: to OVS, or to an in-memory bridge in tests
// (ofconntest.InMemory).
//
// After a bundle lost on the way (a connection lost after the commit
// leaves it applied), what the bridge holds is no longer known for sure,
// so the next commit reads the bridge back first. A bundle the switch
// refused left the bridge as it was: the owners it names are held back
// (dataplanes.Holds) and the rest is sent again in the same round; a held
// owner is tried again after a backoff, after a read-back (the refusal
// may have come from a bridge changed behind the driver's back: a group
// deleted), or at the next full sync.
type bridgeFlows struct {
	conn *ofconn.Conn
	st   *engine.State
	// follow has the datapath follow each commit; nil when there is no
	// datapath (an in-memory bridge).
	follow *vswitchd.Follower
	// unsure: a commit failed other than by a refusal; read back before
	// the next one.
	unsure bool
	// holds are the owners whose changes the switch refused.
	holds *dataplanes.Holds
	// known: the installed view was read from the bridge at least once,
	// so a read-back that differs from it found drift.
	known   bool
	metrics *driverMetrics
	// sends counts the bundles sent: an audit's count that no bundle
	// overlapped finds it unchanged across it.
	sends uint64
	// phases, while a full sync times its parts, gets the bridge's.
	phases *syncPhases
}

func newBridgeFlows(conn *ofconn.Conn, st *engine.State, follow *vswitchd.Follower) *bridgeFlows {
	return &bridgeFlows{conn: conn, st: st, follow: follow, holds: dataplanes.NewHolds(), metrics: newDriverMetrics()}
}

// dump reads the flows carrying the driver's cookie tag and every group.
func (b *bridgeFlows) dump(ctx context.Context) ([]ofconn.FlowInfo, []ofconn.GroupInfo, error) {
	flows, err := b.conn.DumpFlows(ctx, of.CookieTag, of.CookieTagMask, b.st.InstalledFlows())
	if err != nil {
		return nil, nil, fmt.Errorf("reading installed flows: %w", err)
	}
	groups, err := b.conn.DumpGroups(ctx, b.st.InstalledGroups())
	if err != nil {
		return nil, nil, fmt.Errorf("reading installed groups: %w", err)
	}
	return flows, groups, nil
}

// readBack replaces the installed view with what the bridge holds.
func (b *bridgeFlows) readBack(ctx context.Context) error {
	flows, groups, err := b.dump(ctx)
	if err != nil {
		return err
	}
	flowDrift, groupDrift := b.st.Adopt(flows, groups)
	if b.known {
		b.metrics.drift.WithLabelValues("flow").Add(float64(flowDrift))
		b.metrics.drift.WithLabelValues("group").Add(float64(groupDrift))
	}
	b.known, b.unsure = true, false
	b.metrics.installed(b.st)
	return nil
}

// sync reads the bridge back and commits the difference, trying every
// held owner again.
func (b *bridgeFlows) sync(ctx context.Context) error {
	start := time.Now()
	if err := b.readBack(ctx); err != nil {
		return err
	}
	if b.phases != nil {
		b.phases.readBack = time.Since(start)
	}
	return b.round(ctx, true)
}

// round commits what changed, and the held owners that are due (all of
// them when all is set). Before a held owner is tried again the bridge is
// read back: the refusal may have come from a bridge changed behind the
// driver's back (a group deleted), which the read-back repairs.
func (b *bridgeFlows) round(ctx context.Context, all bool) error {
	now := b.holds.Now()
	retrying, include := b.holds.StartRound(now, all)
	if b.unsure || len(retrying) > 0 && !all {
		if err := b.readBack(ctx); err != nil {
			return err
		}
	}
	err := b.commitIsolating(ctx, func(o engine.OwnerKey) bool { return include(string(o)) })
	if err == nil {
		b.holds.EndRound(retrying, now)
	}
	return err
}

// commitIsolating commits the changes of the owners include takes, as one
// bundle if the switch takes it. When it refuses the bundle, the owners
// whose messages it names are held back and the rest is sent again; when
// it names none, the owners are split in halves, each committed on its
// own, so the refused ones end up alone and held.
func (b *bridgeFlows) commitIsolating(ctx context.Context, include func(engine.OwnerKey) bool) error {
	for {
		start := time.Now()
		batch := b.st.Pending(include)
		if b.phases != nil {
			b.phases.build += time.Since(start)
		}
		err := b.send(ctx, batch, true)
		if err == nil {
			b.st.Committed(include)
			b.metrics.installed(b.st)
			return nil
		}
		var refused *ofconn.RefusedError
		if !errors.As(err, &refused) {
			return err
		}
		named := b.ownersAt(batch, refused.Indexes)
		if len(named) == 0 {
			named = b.ownersAt(batch, allMessages(batch))
			if len(named) > 1 {
				half := map[engine.OwnerKey]bool{}
				for _, o := range named[:len(named)/2] {
					half[o] = true
				}
				if err := b.commitIsolating(ctx, func(o engine.OwnerKey) bool { return include(o) && half[o] }); err != nil {
					return err
				}
				return b.commitIsolating(ctx, func(o engine.OwnerKey) bool { return include(o) && !half[o] })
			}
		}
		for _, o := range named {
			b.holds.Hold(string(o), b.refusalOf(o, batch, refused))
		}
	}
}

// refusalOf is what the switch said about owner's messages: the first
// example that is one of them, or the whole refusal (bounded).
func (b *bridgeFlows) refusalOf(owner engine.OwnerKey, batch *ofconn.Batch, r *ofconn.RefusedError) string {
	for k, ex := range r.Examples {
		if k < len(r.Indexes) && b.st.OwnerOf(batch.Target(r.Indexes[k])) == owner {
			return ex
		}
	}
	return dataplanes.Bounded(r.Error(), dataplanes.MaxMessage)
}

// send commits one bundle and, when it changed something and settle is
// set, has the datapath follow it. A refused bundle left the bridge as it
// was; after any other failure what it holds is not known for sure.
func (b *bridgeFlows) send(ctx context.Context, batch *ofconn.Batch, settle bool) error {
	start := time.Now()
	b.sends++
	follow := b.follow
	if !settle {
		follow = nil
	}
	var beforeCommit func()
	if follow != nil {
		beforeCommit = follow.BeforeCommit(batch.Len())
	}
	timed := b.phases != nil && batch.Len() > 0
	if timed {
		beforeCommit = b.phases.timeSend(batch.Len(), beforeCommit)
	}
	err := b.conn.Commit(ctx, batch, beforeCommit)
	if timed {
		b.phases.committed()
	}
	if err != nil {
		if follow != nil {
			follow.Abandon()
		}
		result := bundleRefused
		var refused *ofconn.RefusedError
		if !errors.As(err, &refused) {
			b.unsure, result = true, bundleFailed
		}
		if batch.Len() > 0 {
			b.metrics.sent(result, 0)
		}
		return err
	}
	if batch.Len() > 0 {
		b.metrics.sent(bundleOK, time.Since(start))
		if follow != nil {
			settle := follow.AfterCommit(ctx)
			b.metrics.settled(settle)
			if b.phases != nil {
				b.phases.settle += settle
			}
		}
	}
	return nil
}

// ownersAt lists, sorted, the owners of the batch's messages at indexes.
func (b *bridgeFlows) ownersAt(batch *ofconn.Batch, indexes []int) []engine.OwnerKey {
	set := map[engine.OwnerKey]bool{}
	for _, i := range indexes {
		set[b.st.OwnerOf(batch.Target(i))] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// allMessages is every index of the batch.
func allMessages(batch *ofconn.Batch) []int {
	all := make([]int, batch.Len())
	for i := range all {
		all[i] = i
	}
	return all
}

// Reads of the periodic audit (audit.go). Each request is answered by OVS
// on its own, so that a bundle on the driver's connection waits for one
// at most, not for the whole read:
//   - flows by cookie, auditLookupChunk requests to a write (OVS finds a
//     whole cookie in its index);
//   - when the bridge holds flows the lookups did not find, every flow
//     with the tag, in slices of about auditSliceFlows (OVS visits every
//     flow to answer each slice: docs/scale.md);
//   - groups by ID, auditGroupChunk to a write.
const (
	auditLookupChunk = 256
	auditSliceFlows  = 1024
	auditGroupChunk  = 128
	// auditPause between two parts leaves the CPUs to a change and to
	// OVS's own work: at 10k Services an audit is ~180 parts, so ~0.4 s
	// of pauses every --sync-period.
	auditPause = 2 * time.Millisecond
)

// lookUpAside reads the flows of cookies over the aside connection,
// outside the driver's lock.
func lookUpAside(ctx context.Context, aside *ofconn.Conn, cookies []uint64) ([]ofconn.FlowInfo, error) {
	flows, err := aside.DescribeFlows(ctx, cookies, ofconn.Paced{Chunk: auditLookupChunk, Pause: auditPause})
	if err != nil {
		return nil, fmt.Errorf("reading installed flows: %w", err)
	}
	return flows, nil
}

// scanAside reads every flow with the tag over the aside connection, in
// slices (expect: how many there are).
func scanAside(ctx context.Context, aside *ofconn.Conn, expect int) ([]ofconn.FlowInfo, error) {
	bits := 0
	for bits < 16 && expect>>bits > auditSliceFlows {
		bits++
	}
	flows := make([]ofconn.FlowInfo, 0, expect+expect/8)
	for i := range 1 << bits {
		cookie, mask := of.CookieSlice(i, bits)
		part, err := aside.DumpFlows(ctx, cookie, mask, 0)
		if err != nil {
			return nil, fmt.Errorf("reading installed flows (slice %d of %d): %w", i+1, 1<<bits, err)
		}
		flows = append(flows, part...)
		time.Sleep(auditPause)
	}
	return flows, nil
}

// groupsAside reads the groups of ids over the aside connection.
func groupsAside(ctx context.Context, aside *ofconn.Conn, ids []uint32) ([]ofconn.GroupInfo, error) {
	groups, err := aside.DescribeGroups(ctx, ids, ofconn.Paced{Chunk: auditGroupChunk, Pause: auditPause})
	if err != nil {
		return nil, fmt.Errorf("reading installed groups: %w", err)
	}
	return groups, nil
}

// adoptAudit adopts an audit's drift, except what commits changed since
// it began (engine.State.EndAudit), and counts it.
func (b *bridgeFlows) adoptAudit(drift engine.AuditDrift) {
	flowDrift, groupDrift, ok := b.st.EndAudit(drift)
	if !ok {
		return
	}
	b.metrics.drift.WithLabelValues("flow").Add(float64(flowDrift))
	b.metrics.drift.WithLabelValues("group").Add(float64(groupDrift))
	b.metrics.installed(b.st)
}
