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
// few fields the driver needs (at 10k Services, libOpenflow decoding every
// dumped flow's match and actions was most of a periodic resync's time;
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

// DumpFlows lists installed flows whose cookie matches cookie under mask.
func (c *Conn) DumpFlows(ctx context.Context, cookie, mask uint64) ([]FlowInfo, error) {
	body := make([]byte, 0, mpFlowDescRequest)
	body = append(body, openflow15.OFPTT_ALL, 0, 0, 0)
	body = binary.BigEndian.AppendUint32(body, openflow15.P_ANY)
	body = binary.BigEndian.AppendUint32(body, openflow15.OFPG_ANY)
	body = binary.BigEndian.AppendUint32(body, 0)
	body = binary.BigEndian.AppendUint64(body, cookie)
	body = binary.BigEndian.AppendUint64(body, mask)
	body = append(body, 0, openflow15.MatchType_OXM, 0, 4, 0, 0, 0, 0)
	var out []FlowInfo
	err := c.multipart(ctx, openflow15.MultipartType_FlowDesc, body, func(entry []byte) error {
		if len(entry) < flowDescCookieAt+8 {
			return fmt.Errorf("flow description of %d bytes", len(entry))
		}
		out = append(out, FlowInfo{Table: entry[flowDescTableAt], Cookie: binary.BigEndian.Uint64(entry[flowDescCookieAt:])})
		return nil
	})
	return out, err
}

// DumpGroups lists every installed group with its buckets' IDs.
func (c *Conn) DumpGroups(ctx context.Context) ([]GroupInfo, error) {
	body := binary.BigEndian.AppendUint32(make([]byte, 0, mpGroupDescRequest), openflow15.OFPG_ALL)
	body = binary.BigEndian.AppendUint32(body, 0)
	var out []GroupInfo
	err := c.multipart(ctx, openflow15.MultipartType_GroupDesc, body, func(entry []byte) error {
		if len(entry) < groupDescFixedLen {
			return fmt.Errorf("group description of %d bytes", len(entry))
		}
		g := GroupInfo{ID: binary.BigEndian.Uint32(entry[4:])}
		buckets := int(binary.BigEndian.Uint16(entry[8:]))
		if groupDescFixedLen+buckets > len(entry) {
			return fmt.Errorf("group %d: buckets of %d bytes in %d", g.ID, buckets, len(entry))
		}
		for b := entry[groupDescFixedLen : groupDescFixedLen+buckets]; len(b) > 0; {
			n := int(binary.BigEndian.Uint16(b))
			if n < bucketFixedLen || n > len(b) {
				return fmt.Errorf("group %d: a bucket of %d bytes", g.ID, n)
			}
			g.BucketIDs = append(g.BucketIDs, binary.BigEndian.Uint32(b[4:]))
			b = b[n:]
		}
		out = append(out, g)
		return nil
	})
	return out, err
}

// multipart sends a multipart request and hands every entry of every
// part of the reply (each starts with its 16-bit length) to entry.
func (c *Conn) multipart(ctx context.Context, typ uint16, body []byte, entry func([]byte) error) error {
	err := c.onBulk(ctx, dumpTimeout, func(ctx context.Context, bc *bulkConn) error {
		return bc.multipart(ctx, typ, body, entry)
	}, nil)
	if err != nil {
		return fmt.Errorf("dump: %w", err)
	}
	return nil
}
