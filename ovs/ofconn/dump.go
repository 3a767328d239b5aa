package ofconn

import (
	"context"
	"encoding/binary"
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

// GroupInfo is an installed group: its ID and its buckets' IDs (a bucket's
// ID names its actions).
type GroupInfo struct {
	ID        uint32
	BucketIDs []uint32
}

// dumpTimeout bounds a dump when the caller's context has no deadline.
const dumpTimeout = 15 * time.Second

// Dumps go over the bulk connection and are read from the wire for the
// few fields the driver needs (libOpenflow decoding every dumped flow's
// match and actions was most of a periodic resync's time, docs/scale.md;
// and it cannot decode group descriptions that carry a selection method).
// The layouts are OpenFlow 1.5's (ofp_flow_desc, ofp_group_desc,
// ofp_bucket).
const (
	mpHeaderLen        = 8  // type, flags, pad
	flowDescCookieAt   = 16 // length, pad, table, pad, priority, timeouts, flags, importance
	flowDescTableAt    = 4
	groupDescFixedLen  = 16 // length, type, pad, group_id, bucket_array_len, pad
	bucketFixedLen     = 8  // length, action_array_len, bucket_id
	mpFlowDescRequest  = 40 // table, pad, out_port, out_group, pad, cookie, mask, empty match
	mpGroupDescRequest = 8  // group_id, pad
)

// FlowDescRequestLen is the length of the body of the flow description
// request DumpFlows sends: table, pad, out_port, out_group, pad, cookie,
// cookie mask, an empty match.
const FlowDescRequestLen = mpFlowDescRequest

// DumpFlows lists installed flows whose cookie matches cookie under mask;
// expect is how many the caller expects (the list's first capacity).
func (c *Conn) DumpFlows(ctx context.Context, cookie, mask uint64, expect int) ([]FlowInfo, error) {
	out := make([]FlowInfo, 0, expect)
	body := appendFlowDescRequest(nil, openflow15.OFPTT_ALL, cookie, mask)
	err := c.multipart(ctx, openflow15.MultipartType_FlowDesc, body, func(entry []byte) error {
		f, err := flowInfo(entry)
		out = append(out, f)
		return err
	})
	return out, err
}

// appendFlowDescRequest appends the body of a flow description (or
// aggregate) request for the flows of table (OFPTT_ALL: every table)
// whose cookie matches cookie under mask.
func appendFlowDescRequest(body []byte, table uint8, cookie, mask uint64) []byte {
	body = append(body, table, 0, 0, 0)
	body = binary.BigEndian.AppendUint32(body, openflow15.P_ANY)
	body = binary.BigEndian.AppendUint32(body, openflow15.OFPG_ANY)
	body = binary.BigEndian.AppendUint32(body, 0)
	body = binary.BigEndian.AppendUint64(body, cookie)
	body = binary.BigEndian.AppendUint64(body, mask)
	return append(body, 0, openflow15.MatchType_OXM, 0, 4, 0, 0, 0, 0)
}

// DumpGroups lists every installed group with its buckets' IDs; expect is
// how many groups the caller expects (the list's first capacity). The
// groups' bucket IDs share a few large arrays.
func (c *Conn) DumpGroups(ctx context.Context, expect int) ([]GroupInfo, error) {
	body := binary.BigEndian.AppendUint32(make([]byte, 0, mpGroupDescRequest), openflow15.OFPG_ALL)
	body = binary.BigEndian.AppendUint32(body, 0)
	out := make([]GroupInfo, 0, expect)
	var ids []uint32
	err := c.multipart(ctx, openflow15.MultipartType_GroupDesc, body, func(entry []byte) error {
		g, more, err := groupDesc(entry, ids)
		if err != nil {
			return err
		}
		ids = more
		out = append(out, g)
		return nil
	})
	return out, err
}

// groupDesc reads one ofp_group_desc. Its bucket IDs are appended to
// ids (returned grown) and are the group's BucketIDs.
func groupDesc(entry []byte, ids []uint32) (GroupInfo, []uint32, error) {
	if len(entry) < groupDescFixedLen {
		return GroupInfo{}, ids, fmt.Errorf("group description of %d bytes", len(entry))
	}
	g := GroupInfo{ID: binary.BigEndian.Uint32(entry[4:])}
	buckets := int(binary.BigEndian.Uint16(entry[8:]))
	if groupDescFixedLen+buckets > len(entry) {
		return g, ids, fmt.Errorf("group %d: buckets of %d bytes in %d", g.ID, buckets, len(entry))
	}
	first := len(ids)
	for b := entry[groupDescFixedLen : groupDescFixedLen+buckets]; len(b) > 0; {
		n := int(binary.BigEndian.Uint16(b))
		if n < bucketFixedLen || n > len(b) {
			return g, ids, fmt.Errorf("group %d: a bucket of %d bytes", g.ID, n)
		}
		if len(ids) == cap(ids) {
			// A new array with this group's IDs so far: the earlier
			// groups keep theirs in the old one.
			ids = append(make([]uint32, 0, max(4096, 2*(len(ids)-first+1))), ids[first:]...)
			first = 0
		}
		ids = append(ids, binary.BigEndian.Uint32(b[4:]))
		b = b[n:]
	}
	g.BucketIDs = ids[first:len(ids):len(ids)]
	return g, ids, nil
}

// multipart sends a multipart request and hands every entry of every
// part of the reply (each starts with its 16-bit length) to entry.
func (c *Conn) multipart(ctx context.Context, typ uint16, body []byte, entry func([]byte) error) error {
	err := c.onBulk(ctx, dumpTimeout, func(ctx context.Context, l Link) error {
		return l.Multipart(ctx, typ, body, entry)
	}, nil)
	if err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	return nil
}
