package pipeline

import (
	"fmt"
	"math/bits"
	"net/netip"

	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// The registers a packet carries through the pipeline, declared once: a
// field is a range of a register's bits, a mark one value of a field that
// a table sets and a later one matches. Flows set and match them through
// these names only (and learn specs name them through them), and the
// docs' register table is generated from Fields (docs_test.go).

// regField is the bits start..start+bits-1 of register reg.
type regField struct {
	reg         int
	start, bits uint16
	what        string // for the docs
}

func (f regField) mask() uint32 { return uint32((uint64(1)<<f.bits - 1) << f.start) }

// load sets the field to v (in the field's own units).
func (f regField) load(v uint32) of.Action {
	return of.LoadReg{Index: f.reg, Value: v << f.start, Mask: f.mask()}
}

// match matches the field being v.
func (f regField) match(v uint32) of.Match {
	return of.Reg{Index: f.reg, Value: v << f.start, Mask: f.mask()}
}

// nxm is the register's NXM name (what move and learn name fields by).
func (f regField) nxm() string { return fmt.Sprintf("NXM_NX_REG%d", f.reg) }

// learnCopy is the learn spec that gives the learned flow this field's
// value in the packet that learned it.
func (f regField) learnCopy() of.LearnSpec {
	return of.LearnSpec{Load: true, Field: f.nxm(), Start: f.start, Bits: f.bits, From: f.nxm(), FromStart: f.start}
}

// String names the field as the docs do: reg0[4], reg4[16..18], reg1.
func (f regField) String() string {
	switch {
	case f.bits == 32:
		return fmt.Sprintf("reg%d", f.reg)
	case f.bits == 1:
		return fmt.Sprintf("reg%d[%d]", f.reg, f.start)
	}
	return fmt.Sprintf("reg%d[%d..%d]", f.reg, f.start, f.start+f.bits-1)
}

// regMark is one value of a field.
type regMark struct {
	field regField
	value uint32
}

func (m regMark) set() of.Action  { return m.field.load(m.value) }
func (m regMark) match() of.Match { return m.field.match(m.value) }
func (m regMark) learnLoad() of.LearnSpec {
	f := m.field
	return of.LearnSpec{Load: true, Field: f.nxm(), Start: f.start, Bits: f.bits, Value: uint64(m.value)}
}

// xxregField is a whole 128-bit register (xxreg3 overlaps reg12..reg15).
type xxregField struct {
	xxreg int
	what  string
}

func (f xxregField) load(ip netip.Addr) of.Action {
	return of.LoadXXReg{Index: f.xxreg, Value: ip.As16()}
}
func (f xxregField) match(ip netip.Addr) of.Match { return of.XXReg{Index: f.xxreg, Value: ip.As16()} }
func (f xxregField) nxm() string                  { return fmt.Sprintf("NXM_NX_XXREG%d", f.xxreg) }
func (f xxregField) learnCopy() of.LearnSpec {
	return of.LearnSpec{Load: true, Field: f.nxm(), Bits: 128, From: f.nxm()}
}

// The fields and their marks.
var (
	sourceField = regField{0, 0, 4, "packet source (Classifier): 1 pod, 2 external (forwarded by the host), 3 node (the host's own), 4 tunnel"}
	fromPod     = regMark{sourceField, 1}
	fromOutside = regMark{sourceField, 2}
	fromNode    = regMark{sourceField, 3}
	fromTunnel  = regMark{sourceField, 4}
	// thisNodeField is the source's low bit: pods (1) and the node (3)
	// have it, external (2) and tunnel (4) traffic not.
	thisNodeField = regField{0, 0, 1, "the source is this node (a pod or the host's own): the source's low bit"}
	fromThisNode  = regMark{thisNodeField, 1}

	newConnField = regField{0, 4, 1, "a new connection (ConntrackState)"}
	newConn      = regMark{newConnField, 1}

	masqueradeField = regField{0, 5, 1, "masquerade: SNAT the connection (ServiceLB)"}
	masquerade      = regMark{masqueradeField, 1}

	destField = regField{0, 6, 2, "destination (L3Forwarding): 1 pod, 2 gateway, 3 tunnel"}
	toPod     = regMark{destField, 1}
	toGateway = regMark{destField, 2}
	toTunnel  = regMark{destField, 3}

	serviceField = regField{0, 8, 1, "the connection is DNATed to a service endpoint"}
	isService    = regMark{serviceField, 1}
	notService   = regMark{serviceField, 0}

	fragmentField     = regField{0, 9, 1, "a later IP fragment of a service connection whose addresses the pipeline has rewritten (Fragments)"}
	fragmentRewritten = regMark{fragmentField, 1}
	fragmentAsIs      = regMark{fragmentField, 0}

	outPortField = regField{1, 0, 32, "output port (L3Forwarding)"}
	scratchField = regField{2, 0, 32, "scratch (the ARP responder swaps addresses through it)"}

	endpointIPField  = regField{3, 0, 32, "the chosen endpoint's IPv4 address"}
	endpointIP6Field = xxregField{3, "the chosen endpoint's IPv6 address (overlaps reg12..reg15)"}

	endpointPortField  = regField{4, 0, 16, "the chosen endpoint's port"}
	frontendPortField  = regField{5, 0, 16, "a new connection's original destination port (ct_tp_dst), or for a later fragment its frontend IP's only UDP port (Fragments)"}
	endpointStateField = regField{4, 16, 3, "endpoint selection: 1 to select, 2 selected, 3 selected, affinity to learn"}
	toSelect           = regMark{endpointStateField, 1}
	selected           = regMark{endpointStateField, 2}
	toLearn            = regMark{endpointStateField, 3}
)

// ctMark is a bit of the connection's conntrack mark.
type ctMark struct {
	value, mask uint32
	what        string
}

func (m ctMark) match() of.Match { return of.CtMark{Value: m.value, Mask: m.mask} }

// String names the mark's bit as the docs do: ct_mark[4].
func (m ctMark) String() string { return fmt.Sprintf("ct_mark[%d]", bits.TrailingZeros32(m.mask)) }

// serviceConn marks a connection DNATed (or SNATed) for a service, in the
// zone that committed it.
var serviceConn = ctMark{0x10, 0x10, "the connection was DNATed (or SNATed) for a service"}

// tunnelConn marks a connection that came in through the tunnel (overlay).
var tunnelConn = ctMark{0x20, 0x20, "the connection came in through the tunnel (its replies to the peer's address go back through it)"}

// loadEndpoint loads an endpoint's address into the registers.
func loadEndpointIP(ip netip.Addr) of.Action {
	if ip.Is4() {
		return endpointIPField.load(ipv4Value(ip))
	}
	return endpointIP6Field.load(ip)
}

func matchEndpointIP(ip netip.Addr) of.Match {
	if ip.Is4() {
		return endpointIPField.match(ipv4Value(ip))
	}
	return endpointIP6Field.match(ip)
}

func ipv4Value(ip netip.Addr) uint32 {
	b := ip.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// registerDocs lists the fields and marks for the docs, in register
// order: name, meaning.
func registerDocs() [][2]string {
	out := [][2]string{}
	for _, f := range []regField{sourceField, thisNodeField, newConnField, masqueradeField, destField, serviceField, fragmentField,
		outPortField, scratchField, endpointIPField} {
		out = append(out, [2]string{f.String(), f.what})
	}
	out = append(out, [2]string{fmt.Sprintf("xxreg%d", endpointIP6Field.xxreg), endpointIP6Field.what})
	for _, f := range []regField{endpointPortField, endpointStateField, frontendPortField} {
		out = append(out, [2]string{f.String(), f.what})
	}
	return append(out, [2]string{serviceConn.String(), serviceConn.what}, [2]string{tunnelConn.String(), tunnelConn.what},
		[2]string{"ct_label", "a service connection's endpoint address (IPv4 in bits 0..31), for its later fragments (Fragments)"})
}
