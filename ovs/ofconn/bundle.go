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
func (b *Batch) Message(buf []byte, i int, xid uint32) ([]byte, error) {
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
func (b *Batch) Object(i int) (*of.Flow, *of.Group) {
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

// Target is what the i-th message is about: a flow, by its cookie (an
// add, or a delete of that exact cookie), or a group, by its ID.
func (b *Batch) Target(i int) (cookie uint64, group uint32, isGroup bool) {
	switch f, g := b.Object(i); {
	case g != nil:
		return 0, g.ID, true
	case f != nil:
		return f.Cookie(), 0, false
	}
	i -= len(b.GroupAdds) + len(b.GroupModifies) + len(b.FlowAdds)
	if i < len(b.FlowDeletes) {
		return b.FlowDeletes[i].Cookie, 0, false
	}
	return 0, b.GroupDeletes[i-len(b.FlowDeletes)], true
}

// describe names the i-th message for an error, in at most
// maxDescription bytes: a group by its ID and size, never its buckets
// (a group of 400 buckets is 50 KB of text).
func (b *Batch) Describe(i int) string {
	var s string
	switch f, g := b.Object(i); {
	case g != nil && i < len(b.GroupAdds):
		s = fmt.Sprintf("add group %#x (%d buckets)", g.ID, g.Buckets.Len())
	case g != nil:
		s = fmt.Sprintf("modify group %#x (%d buckets)", g.ID, g.Buckets.Len())
	case f != nil:
		s = "add " + f.Text()
	default:
		i -= len(b.GroupAdds) + len(b.GroupModifies) + len(b.FlowAdds)
		if i < len(b.FlowDeletes) {
			d := b.FlowDeletes[i]
			s = fmt.Sprintf("delete flows cookie=0x%x/0x%x", d.Cookie, d.Mask)
		} else {
			s = fmt.Sprintf("delete group %#x", b.GroupDeletes[i-len(b.FlowDeletes)])
		}
	}
	if len(s) > maxDescription {
		s = s[:maxDescription] + "…"
	}
	return s
}

// maxDescription bounds a message's description.
const maxDescription = 300

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
	err := c.onBulk(ctx, commitTimeout, func(ctx context.Context, l Link) error {
		return l.Transact(ctx, b, beforeCommit)
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
func (c *Conn) onBulk(ctx context.Context, timeout time.Duration, f func(context.Context, Link) error, harmless func(error) bool) error {
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
			l.Close()
			c.bulk = nil
		}
		return err
	}
	return nil
}

// Link is what a Conn's bundles and dumps go over: the bulk connection to
// a switch (bulkConn), or a stand-in for one (ofconntest.Bridge). A
// Conn uses one Link at a time, and dials another once it is Broken.
type Link interface {
	// Transact sends the batch as one atomic bundle (see Commit), running
	// beforeCommit (if not nil) right before the commit request.
	Transact(ctx context.Context, b *Batch, beforeCommit func()) error
	// Multipart sends a multipart request of a type and hands every entry
	// of the reply, in the switch's wire format, to entry.
	Multipart(ctx context.Context, typ uint16, body []byte, entry func([]byte) error) error
	Broken() bool
	Close()
}

// bulkLink returns the open link, dialling one if needed.
func (c *Conn) bulkLink(ctx context.Context) (Link, error) {
	if c.bulk != nil && !c.bulk.Broken() {
		return c.bulk, nil
	}
	if c.bulk != nil {
		c.bulk.Close()
		c.bulk = nil
	}
	l, err := c.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w (%s): %v", ErrNotConnected, c.socket, err)
	}
	c.bulk = l
	c.armWatch(l)
	return l, nil
}

// RefusedError is a bundle the switch refused, or that could not be sent
// because a message could not be encoded: nothing of it was committed,
// and the connection is fine.
type RefusedError struct {
	Messages int
	// Indexes are the refused messages' indexes in the batch, in order
	// (empty: the switch refused the bundle without naming a message).
	Indexes  []int
	Examples []string // the first refused messages and why; or why the bundle was
}

func (e *RefusedError) Error() string {
	if len(e.Indexes) == 0 {
		return fmt.Sprintf("the switch refused the bundle of %d messages, naming none of them: %s", e.Messages, strings.Join(e.Examples, "; "))
	}
	return fmt.Sprintf("the switch refused %d of %d messages of the bundle, which was discarded: %s",
		len(e.Indexes), e.Messages, strings.Join(e.Examples, "; "))
}

// Refuse adds the batch's i-th message, refused for why, to r (made if
// nil), and returns r.
func (b *Batch) Refuse(r *RefusedError, i int, why string) *RefusedError {
	if r == nil {
		r = &RefusedError{Messages: b.Len()}
	}
	r.Indexes = append(r.Indexes, i)
	if len(r.Examples) < maxRefusedShown {
		r.Examples = append(r.Examples, b.Describe(i)+": "+why)
	}
	return r
}

// ofError names an OpenFlow error type and code (ofnet knows their
// names).
func OpenFlowError(typ, code uint16) string {
	return fmt.Sprintf("%s (OpenFlow error type %d code %d)", ofctrl.GetErrorMessage(typ, code, 0), typ, code)
}
