package ofconn

import (
	"context"
	"encoding/binary"
	"fmt"

	"antrea.io/libOpenflow/openflow15"
)

// Reading flows by their cookies, for the driver's periodic audit.
//
// OVS (3.1, ofproto.c collect_rules_loose) indexes flows by their whole
// cookie: a request for one cookie under an all-ones mask costs it the
// flows with that cookie. A request under any other mask, or an
// aggregate, visits every flow of every table: at 200k flows ~30 ms of
// its main thread, during which a bundle on another connection waits
// (docs/scale.md). So an audit looks its flows up by cookie, and counts
// what carries its tag once, to learn whether the bridge holds anything
// else.

// DescribeFlows lists the flows that the bridge holds with each of
// cookies, asking for each cookie on its own (all-ones mask); a cookie
// it does not hold is left out.
func (c *Conn) DescribeFlows(ctx context.Context, cookies []uint64, p Paced) ([]FlowInfo, error) {
	out := make([]FlowInfo, 0, len(cookies))
	body := func(i int, b []byte) []byte {
		return appendFlowDescRequest(b, openflow15.OFPTT_ALL, cookies[i], ^uint64(0))
	}
	err := c.describeEach(ctx, openflow15.MultipartType_FlowDesc, len(cookies), p, body, func(e []byte) error {
		f, err := flowInfo(e)
		out = append(out, f)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("describing flows: %w", err)
	}
	return out, nil
}

// CountFlows is how many flows of every table have a cookie that matches
// cookie under mask (an aggregate statistics request: OVS visits every
// flow to answer it).
func (c *Conn) CountFlows(ctx context.Context, cookie, mask uint64) (int, error) {
	n, got := 0, false
	body := appendFlowDescRequest(nil, openflow15.OFPTT_ALL, cookie, mask)
	err := c.multipart(ctx, openflow15.MultipartType_AggregateStats, body, func(e []byte) error {
		var err error
		n, err = aggregateFlowCount(e)
		got = err == nil
		return err
	})
	if err == nil && !got {
		err = fmt.Errorf("an aggregate reply without a body")
	}
	if err != nil {
		return 0, fmt.Errorf("counting flows: %w", err)
	}
	return n, nil
}

// flowInfo reads the table and the cookie of one ofp_flow_desc.
func flowInfo(entry []byte) (FlowInfo, error) {
	if len(entry) < flowDescCookieAt+8 {
		return FlowInfo{}, fmt.Errorf("flow description of %d bytes", len(entry))
	}
	return FlowInfo{Table: entry[flowDescTableAt], Cookie: binary.BigEndian.Uint64(entry[flowDescCookieAt:])}, nil
}

// aggregateFlowCount reads the flow count of an aggregate reply's
// ofp_stats (reserved, length, OXS fields; OVS also sends the packet and
// byte counts).
func aggregateFlowCount(stats []byte) (int, error) {
	if len(stats) < 4 {
		return 0, fmt.Errorf("aggregate statistics of %d bytes", len(stats))
	}
	end := int(binary.BigEndian.Uint16(stats[2:]))
	if end < 4 || end > len(stats) {
		return 0, fmt.Errorf("aggregate statistics of length %d in %d bytes", end, len(stats))
	}
	for f := stats[4:end]; len(f) > 0; {
		if len(f) < oxsHeaderLen || oxsHeaderLen+int(f[3]) > len(f) {
			return 0, fmt.Errorf("a cut aggregate statistic")
		}
		class, field, n := binary.BigEndian.Uint16(f), f[2]>>1, int(f[3])
		if class == openflow15.XSC_OPENFLOW_BASIC && field == openflow15.XST_OFB_FLOW_COUNT && n == 4 {
			return int(binary.BigEndian.Uint32(f[oxsHeaderLen:])), nil
		}
		f = f[oxsHeaderLen+n:]
	}
	return 0, fmt.Errorf("aggregate statistics without a flow count")
}

// AppendAggregateStats encodes an aggregate reply's ofp_stats with a flow
// count, and packet and byte counts of 0, as OVS orders them (for a
// stand-in bridge).
func AppendAggregateStats(b []byte, flows int) []byte {
	const length = 4 + 2*(oxsHeaderLen+8) + oxsHeaderLen + 4
	b = append(b, 0, 0, 0, length)
	for _, field := range []uint8{openflow15.XST_OFB_PACKET_COUNT, openflow15.XST_OFB_BYTE_COUNT} {
		b = binary.BigEndian.AppendUint16(b, openflow15.XSC_OPENFLOW_BASIC)
		b = append(b, field<<1, 8)
		b = binary.BigEndian.AppendUint64(b, 0)
	}
	b = binary.BigEndian.AppendUint16(b, openflow15.XSC_OPENFLOW_BASIC)
	b = append(b, openflow15.XST_OFB_FLOW_COUNT<<1, 4)
	b = binary.BigEndian.AppendUint32(b, uint32(flows))
	return append(b, make([]byte, padded8(length)-length)...)
}
