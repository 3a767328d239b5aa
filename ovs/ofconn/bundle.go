package ofconn

import (
	"fmt"

	"antrea.io/libOpenflow/openflow15"
	"antrea.io/ofnet/ofctrl"
)

// Batch is one atomic change of the bridge. Messages are sent in the
// order groups added or modified, flows added, flows deleted, groups
// deleted, so a flow never refers to a group that does not exist yet.
type Batch struct {
	GroupAdds     []*ofctrl.GroupBundleMessage
	GroupModifies []*ofctrl.GroupBundleMessage
	FlowAdds      []*openflow15.FlowMod
	FlowDeletes   []*openflow15.FlowMod
	GroupDeletes  []*ofctrl.GroupBundleMessage
}

// Len counts the messages.
func (b *Batch) Len() int {
	return len(b.GroupAdds) + len(b.GroupModifies) + len(b.FlowAdds) + len(b.FlowDeletes) + len(b.GroupDeletes)
}

// Commit sends the batch as one atomic, ordered bundle: all of it takes
// effect, or none.
func (c *Conn) Commit(b *Batch) error {
	if b.Len() == 0 {
		return nil
	}
	sw, err := c.current()
	if err != nil {
		return err
	}
	tx := sw.NewTransaction(ofctrl.Atomic | ofctrl.Ordered)
	if err := tx.Begin(); err != nil {
		return fmt.Errorf("bundle open: %w", err)
	}
	add := func(m ofctrl.OpenFlowModMessage) error { return tx.AddMessage(m) }
	for _, g := range append(append([]*ofctrl.GroupBundleMessage{}, b.GroupAdds...), b.GroupModifies...) {
		if err := add(g); err != nil {
			return c.abort(tx, fmt.Errorf("bundle add: %w", err))
		}
	}
	for _, fm := range append(append([]*openflow15.FlowMod{}, b.FlowAdds...), b.FlowDeletes...) {
		if err := tx.AddFlow(fm); err != nil {
			return c.abort(tx, fmt.Errorf("bundle add: %w", err))
		}
	}
	for _, g := range b.GroupDeletes {
		if err := add(g); err != nil {
			return c.abort(tx, fmt.Errorf("bundle add: %w", err))
		}
	}
	n, err := tx.Complete()
	if err != nil {
		return fmt.Errorf("bundle close: %w", err)
	}
	if n < b.Len() {
		return c.abort(tx, fmt.Errorf("the switch refused %d of %d messages of the bundle", b.Len()-n, b.Len()))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("bundle commit (%d messages): %w", b.Len(), err)
	}
	c.mu.Lock()
	c.stats.Bundles++
	c.stats.FlowMods += len(b.FlowAdds) + len(b.FlowDeletes)
	c.stats.GroupMods += len(b.GroupAdds) + len(b.GroupModifies) + len(b.GroupDeletes)
	c.mu.Unlock()
	return nil
}

// Stats counts what this connection has committed, and the packet-ins
// dropped because the queue to the handler was full.
type Stats struct {
	Bundles          int
	FlowMods         int
	GroupMods        int
	DroppedPacketIns int
}

// Stats returns the counts so far.
func (c *Conn) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

func (c *Conn) abort(tx *ofctrl.Transaction, err error) error {
	if _, cerr := tx.Complete(); cerr == nil {
		_ = tx.Abort()
	}
	return err
}
