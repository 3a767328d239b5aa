package openflow

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"antrea.io/libOpenflow/openflow15"
)

// The OpenFlow 1.5 encoding of flows and groups, appended to a buffer.
//
// A cold sync sends a flow or two per frontend and a bucket per endpoint;
// built as libOpenflow structures and marshalled, that was millions of
// allocations and most of the driver's CPU (docs/scale.md). So the driver
// encodes its flows and groups itself, straight into the bytes it sends
// (and hashes the same bytes into cookies and bucket IDs). The encoding is
// held to libOpenflow's byte for byte by the tests (wire_test.go), for
// every field, action and message the pipeline uses; field numbers come
// from libOpenflow's field table. The learn, copy_field and controller
// actions, which only a few flows carry, are encoded by libOpenflow.

// oxm is one OXM field: its class and number, and its value's size.
type oxm struct {
	class uint16
	field uint8
	size  uint8
}

// oxmField looks a field up in libOpenflow's table (once, at start).
func oxmField(name string) oxm {
	f, err := openflow15.FindFieldHeaderByName(name, false)
	if err != nil {
		panic(fmt.Sprintf("openflow: field %s: %v", name, err))
	}
	return oxm{class: f.Class, field: f.Field, size: f.Length}
}

var (
	fieldInPort    = oxmField("OXM_OF_IN_PORT")
	fieldEthType   = oxmField("OXM_OF_ETH_TYPE")
	fieldEthSrc    = oxmField("OXM_OF_ETH_SRC")
	fieldEthDst    = oxmField("OXM_OF_ETH_DST")
	fieldIPProto   = oxmField("OXM_OF_IP_PROTO")
	fieldIPv4Src   = oxmField("OXM_OF_IPV4_SRC")
	fieldIPv4Dst   = oxmField("OXM_OF_IPV4_DST")
	fieldIPv6Src   = oxmField("OXM_OF_IPV6_SRC")
	fieldIPv6Dst   = oxmField("OXM_OF_IPV6_DST")
	fieldTCPDst    = oxmField("OXM_OF_TCP_DST")
	fieldUDPDst    = oxmField("OXM_OF_UDP_DST")
	fieldSCTPDst   = oxmField("OXM_OF_SCTP_DST")
	fieldTCPSrc    = oxmField("OXM_OF_TCP_SRC")
	fieldUDPSrc    = oxmField("OXM_OF_UDP_SRC")
	fieldSCTPSrc   = oxmField("OXM_OF_SCTP_SRC")
	fieldArpOp     = oxmField("OXM_OF_ARP_OP")
	fieldArpSpa    = oxmField("OXM_OF_ARP_SPA")
	fieldArpTpa    = oxmField("OXM_OF_ARP_TPA")
	fieldArpSha    = oxmField("OXM_OF_ARP_SHA")
	fieldICMPv6    = oxmField("OXM_OF_ICMPV6_TYPE")
	fieldNDTarget  = oxmField("OXM_OF_IPV6_ND_TARGET")
	fieldCtState   = oxmField("NXM_NX_CT_STATE")
	fieldCtMark    = oxmField("NXM_NX_CT_MARK")
	fieldCtLabel   = oxmField("NXM_NX_CT_LABEL")
	fieldCtNwProto = oxmField("NXM_NX_CT_NW_PROTO")
	fieldCtNwDst   = oxmField("NXM_NX_CT_NW_DST")
	fieldCtIPv6Dst = oxmField("NXM_NX_CT_IPV6_DST")
	fieldIPFrag    = oxmField("NXM_NX_IP_FRAG")
	fieldTunDst    = oxmField("NXM_NX_TUN_IPV4_DST")
	fieldTunIPv6   = oxmField("NXM_NX_TUN_IPV6_DST")
	fieldRegs      = regFields("NXM_NX_REG%d", 16)
	fieldXXRegs    = regFields("NXM_NX_XXREG%d", 4)
	hashFieldOXMs  = map[HashField]oxm{HashIPSrc: fieldIPv4Src, HashIPDst: fieldIPv4Dst, HashIPv6Src: fieldIPv6Src, HashIPv6Dst: fieldIPv6Dst, HashTCPSrc: fieldTCPSrc, HashTCPDst: fieldTCPDst, HashUDPSrc: fieldUDPSrc, HashUDPDst: fieldUDPDst, HashSCTPSrc: fieldSCTPSrc, HashSCTPDst: fieldSCTPDst}
	allOnes        = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	nxVendor       = uint32(openflow15.NxExperimenterID)
	ntrVendor      = uint32(openflow15.NTR_VENDOR_ID)
	selectByHash   = [16]byte{'h', 'a', 's', 'h'}
	ofVersion      = byte(openflow15.VERSION)
	noBuffer       = uint32(0xffffffff)
	anyPort        = uint32(openflow15.P_ANY)
	allBuckets     = uint32(0xffffffff)
)

func regFields(format string, n int) []oxm {
	out := make([]oxm, n)
	for i := range out {
		out[i] = oxmField(fmt.Sprintf(format, i))
	}
	return out
}

func be16(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }
func be32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
func be64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

// appendOXM appends one field with its value, and its mask when given.
func appendOXM(b []byte, f oxm, value, mask []byte) []byte {
	fld := f.field << 1
	if mask != nil {
		fld |= 1
	}
	b = append(be16(b, f.class), fld, byte(len(value)+len(mask)))
	b = append(b, value...)
	return append(b, mask...)
}

func appendOXM32(b []byte, f oxm, v uint32) []byte {
	return be32(append(be16(b, f.class), f.field<<1, 4), v)
}

func appendOXM32Masked(b []byte, f oxm, v, mask uint32) []byte {
	return be32(be32(append(be16(b, f.class), f.field<<1|1, 8), v), mask)
}

func appendOXMAddr(b []byte, f oxm, ip netip.Addr) []byte {
	if ip.Is4() {
		a := ip.As4()
		return appendOXM(b, f, a[:], nil)
	}
	a := ip.As16()
	return appendOXM(b, f, a[:], nil)
}

// pad8 pads b, from start, to a multiple of 8 bytes.
func pad8(b []byte, start int) []byte {
	for (len(b)-start)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

// putLen writes the 16-bit length of what was appended since start at
// start+at.
func putLen(b []byte, start, at int) {
	binary.BigEndian.PutUint16(b[start+at:], uint16(len(b)-start))
}

// appendMatch appends an OpenFlow match (type OXM, its length, the
// fields, padding).
func appendMatch(b []byte, ms []Match) []byte {
	start := len(b)
	b = be16(b, openflow15.MatchType_OXM)
	b = be16(b, 0)
	for _, m := range ms {
		b = m.wire(b)
	}
	putLen(b, start, 2)
	return pad8(b, start)
}

// appendActions appends actions in their OpenFlow encoding.
func appendActions(b []byte, acts []Action) ([]byte, error) {
	for _, a := range acts {
		var err error
		if b, err = a.wire(b); err != nil {
			return nil, fmt.Errorf("%s: %w", a.Text(), err)
		}
	}
	return b, nil
}

// appendSetField appends a set_field action of one field.
func appendSetField(b []byte, field func([]byte) []byte) []byte {
	start := len(b)
	b = be16(b, openflow15.ActionType_SetField)
	b = be16(b, 0)
	b = field(b)
	b = pad8(b, start)
	putLen(b, start, 2)
	return b
}

// nxAction starts a Nicira extension action of a subtype; the caller
// appends its body and calls endAction.
func nxAction(b []byte, subtype uint16) ([]byte, int) {
	start := len(b)
	b = be16(b, openflow15.ActionType_Experimenter)
	b = be16(b, 0)
	b = be32(b, nxVendor)
	return be16(b, subtype), start
}

func endAction(b []byte, start int) []byte {
	putLen(b, start, 2)
	return b
}

// viaLibOpenflow appends an action as libOpenflow marshals it.
func viaLibOpenflow(b []byte, a interface {
	of() (openflow15.Action, error)
}) ([]byte, error) {
	oa, err := a.of()
	if err != nil || oa == nil {
		return b, err
	}
	data, err := oa.MarshalBinary()
	if err != nil {
		return b, err
	}
	return append(b, data...), nil
}

// appendHeader starts a message of a type; endMessage writes its length.
func appendHeader(b []byte, typ uint8, xid uint32) ([]byte, int) {
	start := len(b)
	b = append(b, ofVersion, typ)
	b = be16(b, 0)
	return be32(b, xid), start
}

func endMessage(b []byte, start int) []byte {
	putLen(b, start, 2)
	return b
}

// appendFlowModHead appends a flow mod's fixed part.
func appendFlowModHead(b []byte, cookie, cookieMask uint64, table, command uint8, priority uint16) []byte {
	b = be64(b, cookie)
	b = be64(b, cookieMask)
	b = append(b, table, command)
	b = be16(b, 0) // idle timeout
	b = be16(b, 0) // hard timeout
	b = be16(b, priority)
	b = be32(b, noBuffer)
	b = be32(b, anyPort) // out_port
	b = be32(b, anyPort) // out_group (OFPG_ANY, the same all-ones)
	b = be16(b, 0)       // flags
	return be16(b, 0)    // importance
}

// appendInstructions appends the flow's actions (apply_actions) and its
// goto_table.
func (f *Flow) appendInstructions(b []byte) ([]byte, error) {
	if len(f.Actions) > 0 {
		start := len(b)
		b = be16(b, openflow15.InstrType_APPLY_ACTIONS)
		b = be16(b, 0)
		b = be32(b, 0)
		var err error
		if b, err = appendActions(b, f.Actions); err != nil {
			return nil, err
		}
		if len(b)-start > 8 {
			putLen(b, start, 2)
		} else {
			b = b[:start] // only drops: no instruction
		}
	}
	if f.Goto >= 0 {
		b = be16(b, openflow15.InstrType_GOTO_TABLE)
		b = be16(b, 8)
		b = append(b, uint8(f.Goto), 0, 0, 0)
	}
	return b, nil
}

// AppendFlowAdd appends the message that adds (or replaces) the flow.
func (f *Flow) AppendFlowAdd(b []byte, xid uint32) ([]byte, error) {
	if err := f.ensure(); err != nil {
		return nil, err
	}
	b, start := appendHeader(b, openflow15.Type_FlowMod, xid)
	b = appendFlowModHead(b, f.cookie, 0, f.Table, openflow15.FC_ADD, f.Priority)
	b = appendMatch(b, f.matches())
	b, err := f.appendInstructions(b)
	if err != nil {
		return nil, err
	}
	return endMessage(b, start), nil
}

// AppendFlowDelete appends a message deleting every flow whose cookie
// matches cookie under mask, in every table.
func AppendFlowDelete(b []byte, cookie, mask uint64, xid uint32) []byte {
	b, start := appendHeader(b, openflow15.Type_FlowMod, xid)
	b = appendFlowModHead(b, cookie, mask, openflow15.OFPTT_ALL, openflow15.FC_DELETE, 1000)
	b = appendMatch(b, nil)
	return endMessage(b, start)
}

// AppendGroupMod appends the message for command (OFPGC_ADD, _MODIFY or
// _DELETE) on the group.
func (g *Group) AppendGroupMod(b []byte, command uint16, xid uint32) ([]byte, error) {
	b, start := appendHeader(b, openflow15.Type_GroupMod, xid)
	b = be16(b, command)
	b = append(b, openflow15.GT_SELECT, 0)
	b = be32(b, g.ID)
	arrayLenAt := len(b)
	b = be16(b, 0)
	b = be16(b, 0)
	b = be32(b, allBuckets)
	if command != openflow15.OFPGC_DELETE {
		buckets := len(b)
		for i, id := range g.BucketIDs() {
			var err error
			if b, err = appendBucket(b, id, g.weight(i), g.Buckets.Bucket(i)); err != nil {
				return nil, fmt.Errorf("group %d: %w", g.ID, err)
			}
		}
		binary.BigEndian.PutUint16(b[arrayLenAt:], uint16(len(b)-buckets))
		if len(g.HashFields) > 0 {
			var err error
			if b, err = appendSelectByHash(b, g.HashFields); err != nil {
				return nil, err
			}
		}
	}
	return endMessage(b, start), nil
}

func appendBucket(b []byte, id uint32, weight uint16, acts []Action) ([]byte, error) {
	start := len(b)
	b = be16(b, 0)
	b = be16(b, 0)
	b = be32(b, id)
	b, err := appendActions(b, acts)
	if err != nil {
		return nil, err
	}
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start-8))
	// weight property
	b = be16(b, openflow15.GBPT_WEIGHT)
	b = be16(b, 8)
	b = be16(b, weight)
	b = be16(b, 0)
	putLen(b, start, 0)
	return b, nil
}

// appendSelectByHash appends the selection_method=hash property with its
// fields (each as an OXM whose value is all ones).
func appendSelectByHash(b []byte, fields []HashField) ([]byte, error) {
	start := len(b)
	b = be16(b, openflow15.OFPGPT_EXPERIMENTER)
	b = be16(b, 0)
	b = be32(b, ntrVendor)
	b = be32(b, openflow15.NTRT_SELECTION_METHOD)
	b = be32(b, 0)
	b = append(b, selectByHash[:]...)
	b = be64(b, 0)
	for _, h := range fields {
		f, ok := hashFieldOXMs[h]
		if !ok {
			return nil, fmt.Errorf("unknown hash field %q", h)
		}
		b = appendOXM(b, f, allOnes[:f.size], nil)
	}
	putLen(b, start, 2)
	return pad8(b, start), nil
}
