package ofconntest

import (
	"encoding/binary"

	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
)

// The flow and group descriptions a dump of the in-memory bridge answers
// with, in OVS's wire format (ofconn's dump.go reads them).

// appendFlowDesc appends a flow as an ofp_flow_desc (OpenFlow 1.5), as a
// flow dump answers: no timeouts or flags, and counters at 0.
func appendFlowDesc(b []byte, f *memFlow) []byte {
	start := len(b)
	b = binary.BigEndian.AppendUint16(b, 0) // length, set below
	b = append(b, 0, 0, f.key.table, 0)
	b = binary.BigEndian.AppendUint16(b, f.key.priority)
	b = append(b, make([]byte, 8)...) // idle, hard timeout, flags, importance
	b = binary.BigEndian.AppendUint64(b, f.cookie)
	b = append(b, f.match...)
	b = ofconn.AppendFlowStats(b, 0, 0) // no packet goes through
	b = append(b, f.instructions...)
	binary.BigEndian.PutUint16(b[start:], uint16(len(b)-start))
	return b
}

// appendGroupDesc appends a group as an ofp_group_desc (OpenFlow 1.5).
func appendGroupDesc(b []byte, g *memGroup) []byte {
	start := len(b)
	b = binary.BigEndian.AppendUint16(b, 0) // length, set below
	b = append(b, g.typ, 0)
	b = binary.BigEndian.AppendUint32(b, g.id)
	b = binary.BigEndian.AppendUint16(b, uint16(len(g.buckets)))
	b = append(b, 0, 0, 0, 0, 0, 0)
	b = append(append(b, g.buckets...), g.props...)
	binary.BigEndian.PutUint16(b[start:], uint16(len(b)-start))
	return b
}
