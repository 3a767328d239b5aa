package ofconntest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"slices"

	"antrea.io/libOpenflow/openflow15"
)

// The in-memory bridge reads the bytes the driver sends, as a switch does:
// this file decodes flow and group mods (and checks them as OVS 3.1 does,
// see Bridge); memdump.go encodes the flow and group descriptions a dump
// answers with, which ofconn's dump.go reads.

// Wire-format sizes the bridge reads by (OpenFlow 1.5).
const (
	ofHeaderLen    = 8 // version, type, length, xid
	bucketFixedLen = 8 // length, action_array_len, bucket_id
)

// refusal is an OpenFlow error the bridge answers a message with.
type refusal struct{ typ, code uint16 }

func (r refusal) Error() string { return ofconn.OpenFlowError(r.typ, r.code) }

// errNotModelled marks a message the in-memory bridge does not model (a
// real switch might take it): a test that sends one fails, saying so.
var errNotModelled = errors.New("not modelled by the in-memory bridge")

// memFlow is an installed flow. Its key is what OVS tells flows apart by.
type memFlow struct {
	key          flowKey
	cookie       uint64
	match        []byte // the ofp_match as sent (padded)
	instructions []byte
	groups       []uint32 // groups its actions send to
	text         string
}

type flowKey struct {
	table    uint8
	priority uint16
	match    string // the match's fields, masked and sorted (normalMatch)
}

// memGroup is an installed group.
type memGroup struct {
	id        uint32
	typ       uint8
	buckets   []byte // the bucket array as sent
	props     []byte // the group's properties (selection method)
	bucketIDs []uint32
	sendsTo   []uint32 // groups its buckets send to
	text      string
}

// bridgeMsg is one decoded message of a bundle.
type bridgeMsg struct {
	kind    uint8 // openflow15.Type_FlowMod or Type_GroupMod
	command uint16
	flow    *memFlow // a flow add
	table   uint8    // a flow delete: its table (OFPTT_ALL: every one)
	cookie  uint64   // a flow delete: the cookie under mask
	mask    uint64
	group   *memGroup // a group mod (a delete has only the ID)
}

const (
	flowModFixedLen  = ofHeaderLen + 40 // cookie .. importance
	groupModFixedLen = ofHeaderLen + 16 // command .. command_bucket_id
	actionHeaderLen  = 8
	instrHeaderLen   = 4
	oxmHeaderLen     = 4
	nxSubtypeAt      = 8 // in an experimenter action: vendor at 4, subtype at 8
)

// decodeMessage decodes one message of a bundle and checks what a switch
// checks when the message is added to the bundle.
func decodeMessage(msg []byte) (*bridgeMsg, error) {
	if len(msg) < ofHeaderLen || int(binary.BigEndian.Uint16(msg[2:])) != len(msg) {
		return nil, refusal{openflow15.ET_BAD_REQUEST, openflow15.BRC_BAD_LEN}
	}
	switch msg[1] {
	case openflow15.Type_FlowMod:
		return decodeFlowMod(msg)
	case openflow15.Type_GroupMod:
		return decodeGroupMod(msg)
	}
	return nil, fmt.Errorf("message type %d: %w", msg[1], errNotModelled)
}

func decodeFlowMod(msg []byte) (*bridgeMsg, error) {
	if len(msg) < flowModFixedLen+instrHeaderLen {
		return nil, refusal{openflow15.ET_BAD_REQUEST, openflow15.BRC_BAD_LEN}
	}
	m := &bridgeMsg{kind: openflow15.Type_FlowMod, command: uint16(msg[25]), table: msg[24],
		cookie: binary.BigEndian.Uint64(msg[8:]), mask: binary.BigEndian.Uint64(msg[16:])}
	match, fields, err := readMatch(msg[flowModFixedLen:])
	if err != nil {
		return nil, err
	}
	rest := msg[flowModFixedLen+len(match):]
	switch m.command {
	case openflow15.FC_DELETE:
		if len(fields) > 0 || len(rest) > 0 {
			return nil, fmt.Errorf("a flow delete with a match or instructions: %w", errNotModelled)
		}
		return m, nil
	case openflow15.FC_ADD:
	default:
		return nil, fmt.Errorf("flow mod command %d: %w", m.command, errNotModelled)
	}
	if m.table >= 254 {
		// 254 is OVS's hidden table; 255 means "all".
		return nil, refusal{openflow15.ET_BAD_REQUEST, openflow15.BRC_EPERM}
	}
	f := &memFlow{cookie: m.cookie, match: match, instructions: rest,
		key: flowKey{table: m.table, priority: binary.BigEndian.Uint16(msg[30:]), match: normalMatch(fields)}}
	for len(rest) > 0 {
		if len(rest) < instrHeaderLen {
			return nil, refusal{openflow15.ET_BAD_INSTRUCTION, openflow15.BIC_BAD_LEN}
		}
		n := int(binary.BigEndian.Uint16(rest[2:]))
		if n < instrHeaderLen || n > len(rest) || n%8 != 0 {
			return nil, refusal{openflow15.ET_BAD_INSTRUCTION, openflow15.BIC_BAD_LEN}
		}
		switch typ := binary.BigEndian.Uint16(rest); typ {
		case openflow15.InstrType_GOTO_TABLE:
			if rest[4] <= m.table {
				return nil, refusal{openflow15.ET_BAD_INSTRUCTION, openflow15.BIC_BAD_TABLE_ID}
			}
		case openflow15.InstrType_APPLY_ACTIONS:
			acts, err := readActions(rest[8:n])
			if err != nil {
				return nil, err
			}
			if (acts.ct || acts.decTTL) && !matchesIP(fields) {
				return nil, refusal{openflow15.ET_BAD_ACTION, openflow15.BAC_MATCH_INCONSISTENT}
			}
			f.groups = acts.groups
		default:
			return nil, fmt.Errorf("instruction type %d: %w", typ, errNotModelled)
		}
		rest = rest[n:]
	}
	m.flow = f
	return m, nil
}

func decodeGroupMod(msg []byte) (*bridgeMsg, error) {
	if len(msg) < groupModFixedLen {
		return nil, refusal{openflow15.ET_BAD_REQUEST, openflow15.BRC_BAD_LEN}
	}
	m := &bridgeMsg{kind: openflow15.Type_GroupMod, command: binary.BigEndian.Uint16(msg[8:])}
	g := &memGroup{id: binary.BigEndian.Uint32(msg[12:]), typ: msg[10]}
	m.group = g
	switch m.command {
	case openflow15.OFPGC_DELETE:
		return m, nil
	case openflow15.OFPGC_ADD, openflow15.OFPGC_MODIFY:
	default:
		return nil, fmt.Errorf("group mod command %d: %w", m.command, errNotModelled)
	}
	n := int(binary.BigEndian.Uint16(msg[16:]))
	if groupModFixedLen+n > len(msg) {
		return nil, refusal{openflow15.ET_GROUP_MOD_FAILED, openflow15.GMFC_BAD_BUCKET}
	}
	g.buckets, g.props = msg[groupModFixedLen:groupModFixedLen+n], msg[groupModFixedLen+n:]
	for b := g.buckets; len(b) > 0; {
		size := int(binary.BigEndian.Uint16(b))
		if size < bucketFixedLen || size > len(b) {
			return nil, refusal{openflow15.ET_GROUP_MOD_FAILED, openflow15.GMFC_BAD_BUCKET}
		}
		actLen := int(binary.BigEndian.Uint16(b[2:]))
		id := binary.BigEndian.Uint32(b[4:])
		if bucketFixedLen+actLen > size || slices.Contains(g.bucketIDs, id) {
			return nil, refusal{openflow15.ET_GROUP_MOD_FAILED, openflow15.GMFC_BAD_BUCKET}
		}
		g.bucketIDs = append(g.bucketIDs, id)
		acts, err := readActions(b[bucketFixedLen : bucketFixedLen+actLen])
		if err != nil {
			return nil, err
		}
		// A bucket may send to a group that does not exist (OVS 3.1
		// checks only flows for that); the group keeps it dangling when
		// the group it names is deleted.
		g.sendsTo = append(g.sendsTo, acts.groups...)
		b = b[size:]
	}
	return m, nil
}

// oxmField is one field of a match.
type oxmField struct {
	class       uint16
	field       uint8
	value, mask []byte
}

// readMatch reads an ofp_match: its bytes (with padding) and fields. A
// field named twice, a value with bits outside its mask and a field whose
// prerequisites no earlier field met are refused, as OVS refuses them.
func readMatch(b []byte) ([]byte, []oxmField, error) {
	if len(b) < 4 || binary.BigEndian.Uint16(b) != openflow15.MatchType_OXM {
		return nil, nil, refusal{openflow15.PET_BAD_MATCH, openflow15.BMC_BAD_TYPE}
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	padded := (n + 7) / 8 * 8
	if n < 4 || padded > len(b) {
		return nil, nil, refusal{openflow15.PET_BAD_MATCH, openflow15.BMC_BAD_LEN}
	}
	var fields []oxmField
	for rest := b[4:n]; len(rest) > 0; {
		if len(rest) < oxmHeaderLen || oxmHeaderLen+int(rest[3]) > len(rest) {
			return nil, nil, refusal{openflow15.PET_BAD_MATCH, openflow15.BMC_BAD_LEN}
		}
		f := oxmField{class: binary.BigEndian.Uint16(rest), field: rest[2] >> 1}
		body := rest[oxmHeaderLen : oxmHeaderLen+int(rest[3])]
		f.value = body
		if rest[2]&1 != 0 {
			f.value, f.mask = body[:len(body)/2], body[len(body)/2:]
			for i := range f.value {
				if f.value[i]&^f.mask[i] != 0 {
					return nil, nil, refusal{openflow15.PET_BAD_MATCH, openflow15.BMC_BAD_WILDCARDS}
				}
			}
			if allOnes(f.mask) {
				f.mask = nil
			}
		}
		for _, o := range fields {
			if o.class == f.class && o.field == f.field {
				return nil, nil, refusal{openflow15.PET_BAD_MATCH, openflow15.BMC_DUP_FIELD}
			}
		}
		if !prereqsMet(f, fields) {
			return nil, nil, refusal{openflow15.PET_BAD_MATCH, openflow15.BMC_BAD_PREREQ}
		}
		fields = append(fields, f)
		rest = rest[oxmHeaderLen+int(rest[3]):]
	}
	return b[:padded], fields, nil
}

func allOnes(b []byte) bool { return !slices.ContainsFunc(b, func(x byte) bool { return x != 0xff }) }

// normalMatch is a match as OVS compares matches: its fields in order of
// class and number (the order they were sent in does not count), an
// exact mask the same as none.
func normalMatch(fields []oxmField) string {
	fs := slices.Clone(fields)
	slices.SortFunc(fs, func(a, b oxmField) int {
		if a.class != b.class {
			return int(a.class) - int(b.class)
		}
		return int(a.field) - int(b.field)
	})
	var b []byte
	for _, f := range fs {
		b = binary.BigEndian.AppendUint16(b, f.class)
		b = append(b, f.field, byte(len(f.value)), byte(len(f.mask)))
		b = append(append(b, f.value...), f.mask...)
	}
	return string(b)
}

// Prerequisites of the OpenFlow basic fields the pipeline matches, as
// OVS checks them: on the fields before (an OXM match lists a field's
// prerequisites ahead of it).
var (
	ethIP   = [][]byte{{0x08, 0x00}, {0x86, 0xdd}}
	ethIPv4 = [][]byte{{0x08, 0x00}}
	ethIPv6 = [][]byte{{0x86, 0xdd}}
	ethARP  = [][]byte{{0x08, 0x06}}
)

type prereq struct {
	eth   [][]byte // one of these eth_types
	proto byte     // and, when set, this ip_proto
	icmp6 []byte   // and, when set, one of these ICMPv6 types
}

var prereqs = map[uint8]prereq{
	openflow15.OXM_FIELD_IP_PROTO:       {eth: ethIP},
	openflow15.OXM_FIELD_IPV4_SRC:       {eth: ethIPv4},
	openflow15.OXM_FIELD_IPV4_DST:       {eth: ethIPv4},
	openflow15.OXM_FIELD_IPV6_SRC:       {eth: ethIPv6},
	openflow15.OXM_FIELD_IPV6_DST:       {eth: ethIPv6},
	openflow15.OXM_FIELD_TCP_SRC:        {eth: ethIP, proto: 6},
	openflow15.OXM_FIELD_TCP_DST:        {eth: ethIP, proto: 6},
	openflow15.OXM_FIELD_UDP_SRC:        {eth: ethIP, proto: 17},
	openflow15.OXM_FIELD_UDP_DST:        {eth: ethIP, proto: 17},
	openflow15.OXM_FIELD_SCTP_SRC:       {eth: ethIP, proto: 132},
	openflow15.OXM_FIELD_SCTP_DST:       {eth: ethIP, proto: 132},
	openflow15.OXM_FIELD_ICMPV6_TYPE:    {eth: ethIPv6, proto: 58},
	openflow15.OXM_FIELD_IPV6_ND_TARGET: {eth: ethIPv6, proto: 58, icmp6: []byte{135, 136}},
	openflow15.OXM_FIELD_ARP_OP:         {eth: ethARP},
	openflow15.OXM_FIELD_ARP_SPA:        {eth: ethARP},
	openflow15.OXM_FIELD_ARP_TPA:        {eth: ethARP},
	openflow15.OXM_FIELD_ARP_SHA:        {eth: ethARP},
	openflow15.OXM_FIELD_ARP_THA:        {eth: ethARP},
}

func prereqsMet(f oxmField, before []oxmField) bool {
	p, ok := prereqs[f.field]
	if f.class != openflow15.OXM_CLASS_OPENFLOW_BASIC || !ok {
		return true
	}
	value := func(field uint8) []byte {
		for _, o := range before {
			if o.class == openflow15.OXM_CLASS_OPENFLOW_BASIC && o.field == field && o.mask == nil {
				return o.value
			}
		}
		return nil
	}
	eth := value(openflow15.OXM_FIELD_ETH_TYPE)
	if !slices.ContainsFunc(p.eth, func(e []byte) bool { return bytes.Equal(e, eth) }) {
		return false
	}
	if p.proto != 0 && !bytes.Equal(value(openflow15.OXM_FIELD_IP_PROTO), []byte{p.proto}) {
		return false
	}
	if p.icmp6 != nil {
		t := value(openflow15.OXM_FIELD_ICMPV6_TYPE)
		return len(t) == 1 && slices.Contains(p.icmp6, t[0])
	}
	return true
}

// matchesIP reports whether a match limits a flow to IPv4 or IPv6 (what a
// ct action needs).
func matchesIP(fields []oxmField) bool {
	return prereqsMet(oxmField{class: openflow15.OXM_CLASS_OPENFLOW_BASIC, field: openflow15.OXM_FIELD_IP_PROTO}, fields)
}

// actionsSeen is what the bridge needs of an action list.
type actionsSeen struct {
	groups []uint32
	ct     bool
	decTTL bool // OVS's check_DEC_TTL: the match must make the packet IP, as for ct
}

// readActions walks an action list (not into nested actions: a ct's nat
// and set_field cannot send to a group).
func readActions(b []byte) (actionsSeen, error) {
	var s actionsSeen
	for len(b) > 0 {
		if len(b) < actionHeaderLen {
			return s, refusal{openflow15.ET_BAD_ACTION, openflow15.BAC_BAD_LEN}
		}
		n := int(binary.BigEndian.Uint16(b[2:]))
		if n < actionHeaderLen || n > len(b) || n%8 != 0 {
			return s, refusal{openflow15.ET_BAD_ACTION, openflow15.BAC_BAD_LEN}
		}
		switch binary.BigEndian.Uint16(b) {
		case openflow15.ActionType_Group:
			s.groups = append(s.groups, binary.BigEndian.Uint32(b[4:]))
		case openflow15.ActionType_DecNwTtl:
			s.decTTL = true
		case openflow15.ActionType_Experimenter:
			if n >= nxSubtypeAt+2 && binary.BigEndian.Uint32(b[4:]) == openflow15.NxExperimenterID &&
				binary.BigEndian.Uint16(b[nxSubtypeAt:]) == openflow15.NXAST_CT {
				s.ct = true
			}
		}
		b = b[n:]
	}
	return s, nil
}
