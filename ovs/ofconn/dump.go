package ofconn

import (
	"context"
	"fmt"
	"time"

	"antrea.io/libOpenflow/openflow15"
)

// FlowInfo is what the driver needs of an installed flow: its table and
// cookie (the cookie names the flow's content).
type FlowInfo struct {
	Table  uint8
	Cookie uint64
}

// GroupInfo is an installed group: its ID and number of buckets. (Its
// buckets cannot be read back: libOpenflow fails to decode group
// descriptions that carry a selection method, so groups are listed from
// their statistics.)
type GroupInfo struct {
	ID       uint32
	NBuckets int
}

// dumpTimeout bounds a dump when the caller's context has no deadline: a
// reply libOpenflow cannot decode never arrives.
const dumpTimeout = 15 * time.Second

// multipart sends a multipart request and collects every part of the
// reply.
func (c *Conn) multipart(ctx context.Context, req *openflow15.MultipartRequest) ([]*openflow15.MultipartReply, error) {
	sw, err := c.current()
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, dumpTimeout)
		defer cancel()
	}
	w := make(chan *openflow15.MultipartReply, 1024)
	c.mu.Lock()
	c.waiters[req.Xid] = w
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiters, req.Xid)
		c.mu.Unlock()
	}()
	if err := sw.Send(req); err != nil {
		return nil, err
	}
	var parts []*openflow15.MultipartReply
	for {
		select {
		case rep, ok := <-w:
			if !ok {
				return nil, fmt.Errorf("%w during a dump", ErrNotConnected)
			}
			parts = append(parts, rep)
			if rep.Flags&openflow15.OFPMPF_REPLY_MORE == 0 {
				return parts, nil
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("dump: %w", ctx.Err())
		}
	}
}

// DumpFlows lists installed flows whose cookie matches cookie under mask.
func (c *Conn) DumpFlows(ctx context.Context, cookie, mask uint64) ([]FlowInfo, error) {
	fr := openflow15.NewFlowStatsRequest()
	fr.TableId = openflow15.OFPTT_ALL
	fr.Cookie, fr.CookieMask = cookie, mask
	req := openflow15.NewMpRequest(openflow15.MultipartType_FlowDesc)
	req.Body = append(req.Body, fr)
	parts, err := c.multipart(ctx, req)
	if err != nil {
		return nil, err
	}
	var out []FlowInfo
	for _, p := range parts {
		for _, b := range p.Body {
			if fd, ok := b.(*openflow15.FlowDesc); ok {
				out = append(out, FlowInfo{Table: fd.TableId, Cookie: fd.Cookie})
			}
		}
	}
	return out, nil
}

// DumpGroups lists every installed group.
func (c *Conn) DumpGroups(ctx context.Context) ([]GroupInfo, error) {
	req := openflow15.NewMpRequest(openflow15.MultipartType_GroupStats)
	req.Body = append(req.Body, openflow15.NewGroupMultipartRequest(openflow15.OFPG_ALL))
	parts, err := c.multipart(ctx, req)
	if err != nil {
		return nil, err
	}
	var out []GroupInfo
	for _, p := range parts {
		for _, b := range p.Body {
			if gs, ok := b.(*openflow15.GroupStats); ok {
				out = append(out, GroupInfo{ID: gs.GroupId, NBuckets: len(gs.Stats)})
			}
		}
	}
	return out, nil
}
