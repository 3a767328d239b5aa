package ofconn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"antrea.io/libOpenflow/openflow15"
	"antrea.io/ofnet/ofctrl"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// Batch is one atomic change of the bridge. Messages are sent in the
// order groups added or modified, flows added, flows deleted, groups
// deleted, so a flow never refers to a group that does not exist yet.
type Batch struct {
	GroupAdds     []*of.Group
	GroupModifies []*of.Group
	FlowAdds      []*of.Flow
	FlowDeletes   []CookieMatch
	GroupDeletes  []uint32
}

// CookieMatch deletes every flow whose cookie matches Cookie under Mask.
type CookieMatch struct{ Cookie, Mask uint64 }

// Len counts the messages.
func (b *Batch) Len() int {
	return len(b.GroupAdds) + len(b.GroupModifies) + len(b.FlowAdds) + len(b.FlowDeletes) + len(b.GroupDeletes)
}

// message appends the i-th message of the batch, in sending order.
func (b *Batch) message(buf []byte, i int, xid uint32) ([]byte, error) {
	if i < len(b.GroupAdds) {
		return b.GroupAdds[i].AppendGroupMod(buf, openflow15.OFPGC_ADD, xid)
	}
	i -= len(b.GroupAdds)
	if i < len(b.GroupModifies) {
		return b.GroupModifies[i].AppendGroupMod(buf, openflow15.OFPGC_MODIFY, xid)
	}
	i -= len(b.GroupModifies)
	if i < len(b.FlowAdds) {
		return b.FlowAdds[i].AppendFlowAdd(buf, xid)
	}
	i -= len(b.FlowAdds)
	if i < len(b.FlowDeletes) {
		d := b.FlowDeletes[i]
		return of.AppendFlowDelete(buf, d.Cookie, d.Mask, xid), nil
	}
	i -= len(b.FlowDeletes)
	return (&of.Group{ID: b.GroupDeletes[i]}).AppendGroupMod(buf, openflow15.OFPGC_DELETE, xid)
}

// object is the flow or group the i-th message adds or modifies (both
// nil for a delete).
func (b *Batch) object(i int) (*of.Flow, *of.Group) {
	switch {
	case i < len(b.GroupAdds):
		return nil, b.GroupAdds[i]
	case i < len(b.GroupAdds)+len(b.GroupModifies):
		return nil, b.GroupModifies[i-len(b.GroupAdds)]
	case i < len(b.GroupAdds)+len(b.GroupModifies)+len(b.FlowAdds):
		return b.FlowAdds[i-len(b.GroupAdds)-len(b.GroupModifies)], nil
	}
	return nil, nil
}

// describe names the i-th message for an error.
func (b *Batch) describe(i int) string {
	switch f, g := b.object(i); {
	case g != nil && i < len(b.GroupAdds):
		return "add " + g.Text()
	case g != nil:
		return "modify " + g.Text()
	case f != nil:
		return "add " + f.Text()
	}
	i -= len(b.GroupAdds) + len(b.GroupModifies) + len(b.FlowAdds)
	if i < len(b.FlowDeletes) {
		d := b.FlowDeletes[i]
		return fmt.Sprintf("delete flows cookie=0x%x/0x%x", d.Cookie, d.Mask)
	}
	return fmt.Sprintf("delete group_id=%d", b.GroupDeletes[i-len(b.FlowDeletes)])
}

// commitTimeout bounds a commit when the caller's context has no deadline.
const commitTimeout = 60 * time.Second

// Commit sends the batch as one atomic, ordered bundle: all of it takes
// effect, or none.
//
// beforeCommit, when set, runs once the switch has taken every message,
// right before the commit request is written (the driver arms its
// revalidator wait there).
//
// The bundle goes over a connection of its own (bulkConn), written in
// large writes; ofnet writes each message on its own. Every message is
// sent, then the bundle is closed: OVS answers each message it refuses
// with an error before it answers the close, so a refused message is
// known before anything is committed, and the bundle is discarded.
func (c *Conn) Commit(ctx context.Context, b *Batch, beforeCommit func()) error {
	if b.Len() == 0 {
		return nil
	}
	err := c.onBulk(ctx, commitTimeout, func(ctx context.Context, l link) error {
		return l.transact(ctx, b, beforeCommit)
	}, func(err error) bool {
		var refused *RefusedError
		return errors.As(err, &refused) // discarded: the connection is fine
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.stats.Bundles++
	c.stats.FlowMods += len(b.FlowAdds) + len(b.FlowDeletes)
	c.stats.GroupMods += len(b.GroupAdds) + len(b.GroupModifies) + len(b.GroupDeletes)
	c.mu.Unlock()
	return nil
}

// onBulk runs f on the bulk connection (dialled if needed), one caller at
// a time, within timeout when ctx has no deadline. A failure that harmless
// does not accept drops the connection: its state is unknown, and the next
// caller dials anew.
func (c *Conn) onBulk(ctx context.Context, timeout time.Duration, f func(context.Context, link) error, harmless func(error) bool) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	c.bulkMu.Lock()
	defer c.bulkMu.Unlock()
	l, err := c.bulkLink(ctx)
	if err != nil {
		return err
	}
	if err := f(ctx, l); err != nil {
		if harmless == nil || !harmless(err) {
			l.close()
			c.bulk = nil
		}
		return err
	}
	return nil
}

// link is what bundles and dumps go over: the bulk connection to a switch
// (bulkConn), or a link to an in-memory bridge (MemBridge).
type link interface {
	// transact sends the batch as one atomic bundle (see Commit).
	transact(ctx context.Context, b *Batch, beforeCommit func()) error
	// multipart sends a multipart request of a type and hands every entry
	// of the reply, in the switch's wire format, to entry.
	multipart(ctx context.Context, typ uint16, body []byte, entry func([]byte) error) error
	broken() bool
	close()
}

// bulkLink returns the open link, dialling one if needed.
func (c *Conn) bulkLink(ctx context.Context) (link, error) {
	if c.bulk != nil && !c.bulk.broken() {
		return c.bulk, nil
	}
	if c.bulk != nil {
		c.bulk.close()
		c.bulk = nil
	}
	l, err := c.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w (%s): %v", ErrNotConnected, c.socket, err)
	}
	c.bulk = l
	return l, nil
}

// RefusedError is a bundle the switch refused messages of; nothing of it
// was committed.
type RefusedError struct {
	Messages, Refused int
	Examples          []string // the first refused messages and why
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the switch refused %d of %d messages of the bundle, which was discarded: %s",
		e.Refused, e.Messages, strings.Join(e.Examples, "; "))
}

// ofError names an OpenFlow error type and code (ofnet knows their
// names).
func ofError(typ, code uint16) string {
	return fmt.Sprintf("%s (OpenFlow error type %d code %d)", ofctrl.GetErrorMessage(typ, code, 0), typ, code)
}
