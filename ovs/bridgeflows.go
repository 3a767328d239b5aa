package ovs

import (
	"context"
	"fmt"
	"time"

	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// bridgeFlows is the driver's OpenFlow side: it reads back what the
// bridge holds and adopts it (a full sync, a reconnection), and sends
// what the state wants changed as one atomic bundle, then has the
// datapath follow it. It is all the OpenFlow I/O Sync and Apply do, over
// one connection: to OVS, or to an in-memory bridge in tests
// (ofconn.InMemory).
//
// After a bundle that failed, what the bridge holds is no longer known
// for sure: a connection lost after the commit leaves it applied, and a
// refusal means the bridge holds something the driver did not expect (a
// group deleted or added behind its back). So the next commit reads the
// bridge back first, instead of repeating a bundle that cannot succeed
// until the next full sync.
type bridgeFlows struct {
	conn *ofconn.Conn
	st   *state
	// follow has the datapath follow each commit (settle.go); nil when
	// there is no datapath (an in-memory bridge).
	follow *follower
	// unsure: the last commit failed; read back before the next one.
	unsure bool
	// lastCommit is the last non-empty commit's time until OVS confirmed
	// it (read by benchmarks).
	lastCommit time.Duration
}

// dump reads the flows carrying the driver's cookie tag and every group.
func (b *bridgeFlows) dump(ctx context.Context) ([]ofconn.FlowInfo, []ofconn.GroupInfo, error) {
	flows, err := b.conn.DumpFlows(ctx, of.CookieTag, of.CookieTagMask, len(b.st.installedFlows))
	if err != nil {
		return nil, nil, fmt.Errorf("reading installed flows: %w", err)
	}
	groups, err := b.conn.DumpGroups(ctx, len(b.st.installedGroups))
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
	b.st.adopt(flows, groups)
	b.unsure = false
	return nil
}

// sync reads the bridge back and commits the difference.
func (b *bridgeFlows) sync(ctx context.Context) error {
	if err := b.readBack(ctx); err != nil {
		return err
	}
	return b.commit(ctx)
}

// commit sends what changed as one atomic bundle and, when it took
// effect, has the datapath follow it.
func (b *bridgeFlows) commit(ctx context.Context) error {
	if b.unsure {
		if err := b.readBack(ctx); err != nil {
			return err
		}
	}
	start := time.Now()
	batch := b.st.pending()
	var beforeCommit func()
	if b.follow != nil {
		beforeCommit = b.follow.beforeCommit(batch.Len())
	}
	if err := b.conn.Commit(ctx, batch, beforeCommit); err != nil {
		if b.follow != nil {
			b.follow.abandon()
		}
		b.unsure = true
		return err
	}
	b.st.committed()
	if batch.Len() > 0 {
		b.lastCommit = time.Since(start)
		if b.follow != nil {
			b.follow.afterCommit(ctx)
		}
	}
	return nil
}
