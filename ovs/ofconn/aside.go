package ofconn

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"antrea.io/libOpenflow/openflow15"
)

// Aside returns a second connection to the same bridge, for reads that
// must neither wait behind this one's bundles nor hold them up: the
// driver's periodic audit reads the bridge over it in slices while
// changes are committed over c. It has its own bulk link (dialled when
// first used, closed with c) and no packet-ins; it is meant for dumps.
func (c *Conn) Aside() *Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aside == nil {
		c.aside = &Conn{socket: c.socket + " (aside)", dial: c.dial, over: c.over,
			stop: make(chan struct{}), done: make(chan struct{}), ready: make(chan struct{}), connected: 1}
		close(c.aside.ready)
	}
	return c.aside
}

// closeAside closes the aside connection's link, if any.
func (c *Conn) closeAside() {
	c.mu.Lock()
	a := c.aside
	c.mu.Unlock()
	if a == nil {
		return
	}
	a.bulkMu.Lock()
	defer a.bulkMu.Unlock()
	if a.bulk != nil {
		a.bulk.Close()
		a.bulk = nil
	}
}

// multipartEacher is a Link that sends many multipart requests in one
// write (bulkConn); a Link without it is asked one request at a time.
type multipartEacher interface {
	MultipartEach(ctx context.Context, typ uint16, bodies [][]byte, entry func([]byte) error) error
}

// Paced is how a description's requests go out: Chunk of them to a
// write (at least one), and Pause between two writes, leaving the CPUs to
// other work (the driver's changes, OVS's own); no pause when zero. One
// call reads every chunk, with the same buffers.
type Paced struct {
	Chunk int
	Pause time.Duration
}

// DescribeGroups lists the groups of ids that the bridge holds, with
// their buckets' IDs (an ID it does not hold is left out), asking for
// each by its ID: the switch answers each request on its own, so a
// bundle on another connection is taken between two (a dump of every
// group is answered in one pass: ~70 ms at 11k groups, docs/scale.md).
// The groups' bucket IDs share a few large arrays.
func (c *Conn) DescribeGroups(ctx context.Context, ids []uint32, p Paced) ([]GroupInfo, error) {
	out := make([]GroupInfo, 0, len(ids))
	var bucketIDs []uint32
	body := func(i int, b []byte) []byte {
		return binary.BigEndian.AppendUint64(b, uint64(ids[i])<<32) // group_id, pad
	}
	err := c.describeEach(ctx, openflow15.MultipartType_GroupDesc, len(ids), p, body, func(e []byte) error {
		g, more, err := groupDesc(e, bucketIDs)
		if err != nil {
			return err
		}
		bucketIDs = more
		out = append(out, g)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("describing groups: %w", err)
	}
	return out, nil
}

// describeEach sends n multipart requests of one type, paced, and hands
// every entry of every reply to entry. body appends the i-th request's
// body to b. The requests of a chunk are built in one buffer, sized after
// the first request and kept for every chunk.
func (c *Conn) describeEach(ctx context.Context, typ uint16, n int, p Paced, body func(i int, b []byte) []byte, entry func([]byte) error) error {
	chunk := max(p.Chunk, 1)
	var buf []byte
	ends := make([]int, 0, min(chunk, n))
	bodies := make([][]byte, 0, min(chunk, n))
	for from := 0; from < n; from += chunk {
		if from > 0 && !pause(ctx, p.Pause) {
			return ctx.Err()
		}
		buf, ends, bodies = buf[:0], ends[:0], bodies[:0]
		for i := from; i < min(from+chunk, n); i++ {
			buf = body(i, buf)
			if i == 0 {
				buf = slices.Grow(buf, len(buf)*(min(chunk, n)-1))
			}
			ends = append(ends, len(buf))
		}
		at := 0
		for _, end := range ends {
			bodies = append(bodies, buf[at:end:end])
			at = end
		}
		err := c.onBulk(ctx, dumpTimeout, func(ctx context.Context, l Link) error {
			if m, ok := l.(multipartEacher); ok {
				return m.MultipartEach(ctx, typ, bodies, entry)
			}
			for _, b := range bodies {
				if err := l.Multipart(ctx, typ, b, entry); err != nil {
					return err
				}
			}
			return nil
		}, nil)
		if err != nil {
			return err
		}
	}
	return nil
}

// pause waits d, or until ctx is done (false).
func pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
