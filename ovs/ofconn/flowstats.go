package ofconn

import (
	"context"
	"encoding/binary"
	"fmt"

	"antrea.io/libOpenflow/openflow15"
)

// FlowStats is what OVS counted for one flow: the packets that matched it.
type FlowStats struct {
	Cookie  uint64
	Packets uint64
}

// The ofp_flow_desc layout after its fixed part: the match (ofp_match:
// type, length, OXM fields, padded to 8 bytes), then ofp_stats (reserved,
// length, OXS fields, padded to 8 bytes), then the instructions.
const (
	flowDescMatchAt = flowDescCookieAt + 8
	oxsHeaderLen    = 4 // class, field and has-mask, length
)

// DumpFlowStats reads the packet counts of the flows of one table whose
// cookie matches cookie under mask (a flow description carries its
// statistics in OpenFlow 1.5); expect is how many the caller expects.
func (c *Conn) DumpFlowStats(ctx context.Context, table uint8, cookie, mask uint64, expect int) ([]FlowStats, error) {
	out := make([]FlowStats, 0, expect)
	body := appendFlowDescRequest(nil, table, cookie, mask)
	err := c.multipart(ctx, openflow15.MultipartType_FlowDesc, body, func(entry []byte) error {
		s, err := flowStats(entry)
		out = append(out, s)
		return err
	})
	return out, err
}

// flowStats reads the cookie and the packet count of one ofp_flow_desc.
// A description whose statistics have no packet count reads 0.
func flowStats(entry []byte) (FlowStats, error) {
	if len(entry) < flowDescMatchAt+4 {
		return FlowStats{}, fmt.Errorf("flow description of %d bytes", len(entry))
	}
	s := FlowStats{Cookie: binary.BigEndian.Uint64(entry[flowDescCookieAt:])}
	at := flowDescMatchAt + padded8(int(binary.BigEndian.Uint16(entry[flowDescMatchAt+2:])))
	if at+4 > len(entry) {
		return s, fmt.Errorf("flow %#x: a match past its description's %d bytes", s.Cookie, len(entry))
	}
	end := at + int(binary.BigEndian.Uint16(entry[at+2:]))
	if end > len(entry) || end < at+4 {
		return s, fmt.Errorf("flow %#x: statistics of %d bytes", s.Cookie, end-at)
	}
	for f := entry[at+4 : end]; len(f) > 0; {
		if len(f) < oxsHeaderLen || oxsHeaderLen+int(f[3]) > len(f) {
			return s, fmt.Errorf("flow %#x: a cut statistic", s.Cookie)
		}
		class, field, n := binary.BigEndian.Uint16(f), f[2]>>1, int(f[3])
		if class == openflow15.XSC_OPENFLOW_BASIC && field == openflow15.XST_OFB_PACKET_COUNT && n == 8 {
			s.Packets = binary.BigEndian.Uint64(f[oxsHeaderLen:])
		}
		f = f[oxsHeaderLen+n:]
	}
	return s, nil
}

// AppendFlowStats appends an ofp_stats holding a packet and a byte count,
// as OVS puts them in a flow description (for a stand-in bridge).
func AppendFlowStats(b []byte, packets, bytes uint64) []byte {
	const length = 4 + 2*(oxsHeaderLen+8)
	b = append(b, 0, 0, 0, length)
	for _, c := range []struct {
		field uint8
		n     uint64
	}{{openflow15.XST_OFB_PACKET_COUNT, packets}, {openflow15.XST_OFB_BYTE_COUNT, bytes}} {
		b = binary.BigEndian.AppendUint16(b, openflow15.XSC_OPENFLOW_BASIC)
		b = append(b, c.field<<1, 8)
		b = binary.BigEndian.AppendUint64(b, c.n)
	}
	return append(b, make([]byte, padded8(length)-length)...)
}

// padded8 is n rounded up to a multiple of 8.
func padded8(n int) int { return (n + 7) / 8 * 8 }
