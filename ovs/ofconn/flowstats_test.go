package ofconn

import (
	"encoding/binary"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// flowDescWithStats lays out an ofp_flow_desc as OVS 3.1 sends one: a
// match of one 12-byte OXM field (padded), statistics with the duration,
// the idle time, then the packet and byte counts, and one instruction.
func flowDescWithStats(cookie, packets uint64) []byte {
	b := make([]byte, flowDescCookieAt)
	b[flowDescTableAt] = 6
	b = binary.BigEndian.AppendUint64(b, cookie)
	b = append(b, 0, 1, 0, 16)                                 // match: OXM, 4 + 12 bytes
	b = append(b, 0x80, 0, 0x0c, 4, 10, 96, 0, 10, 0, 0, 0, 0) // ipv4_dst, padded to 16
	b = append(b, 0, 0, 0, 4+4*12)                             // ofp_stats
	b = append(b, 0x80, 0x02, 0<<1, 8, 0, 0, 0, 5, 0, 0, 0, 0) // duration
	b = append(b, 0x80, 0x02, 1<<1, 8, 0, 0, 0, 1, 0, 0, 0, 0) // idle time
	b = append(b, 0x80, 0x02, 4<<1, 8)
	b = binary.BigEndian.AppendUint64(b, packets)
	b = append(b, 0x80, 0x02, 5<<1, 8)
	b = binary.BigEndian.AppendUint64(b, 60*packets)
	b = append(b, 0, 0, 0, 0)             // padding to 8
	b = append(b, 0, 4, 0, 8, 0, 0, 0, 0) // clear-actions
	binary.BigEndian.PutUint16(b, uint16(len(b)))
	return b
}

// A flow description's packet count is read past its match; statistics
// without one read 0 (the in-memory bridge's encoding is read too); a cut
// description is refused, never read past its end.
func TestFlowStats(t *testing.T) {
	full := flowDescWithStats(0x5359100000000abc, 41)
	got, err := flowStats(full)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(FlowStats{Cookie: 0x5359100000000abc, Packets: 41}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	noCounts := append(append(full[:flowDescMatchAt+16:flowDescMatchAt+16], 0, 0, 0, 4, 0, 0, 0, 0), 0, 4, 0, 8, 0, 0, 0, 0)
	if got, err := flowStats(noCounts); err != nil || got.Packets != 0 {
		t.Errorf("statistics without a packet count: %+v, %v", got, err)
	}
	ours := AppendFlowStats(append([]byte(nil), full[:flowDescMatchAt+16]...), 7, 420)
	if got, err := flowStats(ours); err != nil || got.Packets != 7 {
		t.Errorf("AppendFlowStats' encoding: %+v, %v", got, err)
	}
	for _, n := range []int{flowDescMatchAt + 3, flowDescMatchAt + 16, flowDescMatchAt + 20, flowDescMatchAt + 50} {
		if _, err := flowStats(full[:n]); err == nil {
			t.Errorf("a description cut to %d bytes was read", n)
		}
	}
}
