package openflow

import (
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
)

// CookieTag marks every flow Switchyard installs (the top 16 bits: "SY").
// The driver reads, modifies and deletes only flows carrying it.
const (
	CookieTag     uint64 = 0x5359 << 48
	CookieTagMask uint64 = 0xffff << 48
	// kind nibble below the tag
	cookieKindShift        = 44
	CookieKindFlow  uint64 = 1 << cookieKindShift // a pipeline flow; low 44 bits: content hash
	CookieKindLearn uint64 = 2 << cookieKindShift // flows learned for session affinity
	cookieKindMask  uint64 = 0xf << cookieKindShift
	cookieHashMask  uint64 = 1<<cookieKindShift - 1
)

// CookieSlice is the cookie and mask of slice i of 1<<bits (bits ≤ 16)
// into which the driver's flows fall by the top bits of their content
// hash: a flow dump filtered by them reads a slice (learned flows fall in
// slice 0). The slices together are every flow with the tag.
func CookieSlice(i, bits int) (cookie, mask uint64) {
	shift := cookieKindShift - bits
	return CookieTag | uint64(i)<<shift, CookieTagMask | (uint64(1)<<bits-1)<<shift
}

// PipelineCookies is the cookie and mask of every pipeline flow (not
// the learned ones).
func PipelineCookies() (cookie, mask uint64) {
	return CookieTag | CookieKindFlow, CookieTagMask | cookieKindMask
}

// IsLearnedCookie reports whether a cookie marks a learned affinity flow.
func IsLearnedCookie(c uint64) bool {
	return c&CookieTagMask == CookieTag && c&cookieKindMask == CookieKindLearn
}

// Flow is one OpenFlow flow.
type Flow struct {
	Table    uint8
	Priority uint16
	Match    []Match
	Actions  []Action
	// Goto, when >= 0, continues in that table after the actions.
	Goto int

	// cookie, identity and sum are worked out once, from the flow's
	// encoding (see ensure); cookie 0: not yet, or the flow cannot be
	// encoded. sum is the whole encoding's 64-bit hash, of which the
	// cookie keeps 44 bits.
	cookie, identity, sum uint64
}

// ensure encodes the flow once and keeps its cookie and identity: FNV-1a
// hashes of its OpenFlow encoding (table, priority and match; and for the
// cookie its instructions too). A flow is immutable once built.
func (f *Flow) ensure() error {
	if f.cookie != 0 {
		return nil
	}
	buf := scratch.Get().(*[]byte)
	defer scratch.Put(buf)
	b, matchLen, err := f.appendHashed((*buf)[:0])
	*buf = b
	if err != nil {
		return err
	}
	id := fnv.New64a()
	id.Write(b[:matchLen])
	f.identity = id.Sum64()
	c := fnv.New64a()
	c.Write(b)
	f.sum = c.Sum64()
	f.cookie = CookieTag | CookieKindFlow | f.sum&cookieHashMask
	return nil
}

// appendHashed appends what the flow's hashes are of: table, priority and
// match (the first matchLen bytes), then the instructions.
func (f *Flow) appendHashed(b []byte) (_ []byte, matchLen int, _ error) {
	b = append(b, f.Table, byte(f.Priority>>8), byte(f.Priority))
	b = appendMatch(b, f.matches())
	matchLen = len(b)
	b, err := f.appendInstructions(b)
	return b, matchLen, err
}

// Same reports whether two flows are the same flow, for telling a cookie
// shared by two different flows (a collision of the cookie's 44 bits)
// from one flow wanted twice: their whole encodings' 64-bit hashes agree.
func (f *Flow) Same(g *Flow) bool {
	f.ensure()
	g.ensure()
	return f == g || f.sum == g.sum && f.identity == g.identity
}

// Sum is the 64-bit hash of the flow's whole encoding: with Identity, what
// Same compares, for one who keeps the hashes and not the flow.
func (f *Flow) Sum() uint64 { f.ensure(); return f.sum }

// scratch holds buffers for encoding flows to hash them.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Identity is a hash of what OpenFlow tells flows apart by: table,
// priority and match. Adding a flow with the identity of an installed one
// replaces it.
func (f *Flow) Identity() uint64 { f.ensure(); return f.identity }

// render writes the flow without its cookie, as ovs-ofctl reads it.
func (f *Flow) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table=%d,priority=%d", f.Table, f.Priority)
	for _, m := range f.matches() {
		b.WriteString(",")
		b.WriteString(m.Text())
	}
	b.WriteString(",actions=")
	var acts []string
	for _, a := range f.Actions {
		acts = append(acts, a.Text())
	}
	if f.Goto >= 0 {
		acts = append(acts, fmt.Sprintf("goto_table:%d", f.Goto))
	}
	if len(acts) == 0 {
		acts = []string{"drop"}
	}
	b.WriteString(strings.Join(acts, ","))
	return b.String()
}

// matches is the flow's match with the matches on one register merged
// into one (OpenFlow allows each field once; the pipeline matches several
// marks of one register).
func (f *Flow) matches() []Match {
	regs := 0
	for _, m := range f.Match {
		if _, ok := m.(Reg); ok {
			regs++
		}
	}
	if regs < 2 {
		return f.Match
	}
	out := make([]Match, 0, len(f.Match))
	for _, m := range f.Match {
		r, ok := m.(Reg)
		if !ok {
			out = append(out, m)
			continue
		}
		merged := false
		for i, o := range out {
			if prev, ok := o.(Reg); ok && prev.Index == r.Index {
				out[i] = Reg{Index: r.Index, Value: prev.Value&^r.Mask | r.Value&r.Mask, Mask: prev.Mask | r.Mask}
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, r)
		}
	}
	return out
}

// Cookie is the flow's cookie: the tag, the flow kind and a hash of the
// flow's whole encoding, so equal cookies mean equal flows.
func (f *Flow) Cookie() uint64 { f.ensure(); return f.cookie }

// Text renders the flow with its cookie, as `ovs-ofctl add-flows` reads it.
func (f *Flow) Text() string {
	b := f.render()
	i := strings.Index(b, ",")
	return fmt.Sprintf("%s,cookie=0x%x%s", b[:i], f.Cookie(), b[i:])
}

// FlowMod returns the OpenFlow message that adds (or replaces) the flow.

// DeleteByCookie returns a message deleting every flow whose cookie
// matches cookie under mask, in every table (no instructions: a delete
// with instructions corrupts libOpenflow's framing).

// Group is a select group: each new connection takes one of its buckets.
type Group struct {
	ID      uint32
	Buckets Buckets
	// HashFields, when set, select a bucket by a hash of these fields
	// (selection_method=hash). OVS then keeps a datapath flow per distinct
	// value of them, so each new connection is translated on its own: it
	// sees flows learned by earlier connections at once, and gets its own
	// pick, instead of riding an earlier connection's cached choice.
	HashFields []HashField
	// Key, when not 0, is a hash of everything the buckets are made of,
	// given by the group's maker: two groups of one ID with the same Key
	// have the same buckets, so a driver that kept the first one's bucket
	// IDs need not encode the second's to know it unchanged (what a group
	// of thousands of buckets costs).
	Key uint64

	// bucketIDs caches BucketIDs (a group is immutable once built; its
	// buckets' text is otherwise rendered for every use).
	bucketIDs []uint32
}

// Buckets are a group's buckets, built when a message or text needs them:
// a driver keeps every installed group for as long as it is installed,
// and its buckets' actions only while they are sent (kept, they were a
// tenth of the heap: docs/scale.md, "Figures behind the code").
type Buckets interface {
	Len() int
	// Bucket returns the actions of bucket i, new on each call.
	Bucket(i int) []Action
}

// Weighted is implemented by Buckets whose buckets do not all have
// DefaultWeight.
type Weighted interface {
	Weight(i int) uint16
}

// DefaultWeight is a bucket's weight unless its Buckets say otherwise.
const DefaultWeight = 100

// weight is bucket i's weight.
func (g *Group) weight(i int) uint16 {
	if w, ok := g.Buckets.(Weighted); ok {
		return w.Weight(i)
	}
	return DefaultWeight
}

// BucketList is a literal list of buckets.
type BucketList [][]Action

// Len implements Buckets.
func (l BucketList) Len() int { return len(l) }

// Bucket implements Buckets.
func (l BucketList) Bucket(i int) []Action { return l[i] }

func (g *Group) nBuckets() int {
	if g.Buckets == nil {
		return 0
	}
	return g.Buckets.Len()
}

// HashField is one field of a select group's hash.
type HashField string

// Hash fields (ovs-ofctl names).
const (
	HashIPSrc   HashField = "ip_src"
	HashIPDst   HashField = "ip_dst"
	HashIPv6Src HashField = "ipv6_src"
	HashIPv6Dst HashField = "ipv6_dst"
	HashTCPSrc  HashField = "tcp_src"
	HashTCPDst  HashField = "tcp_dst"
	HashUDPSrc  HashField = "udp_src"
	HashUDPDst  HashField = "udp_dst"
	HashSCTPSrc HashField = "sctp_src"
	HashSCTPDst HashField = "sctp_dst"
)

// mask returns the field as a libOpenflow match field whose value is its
// all-ones mask (how a selection method property names fields).

func bucketText(acts []Action) string {
	var s []string
	for _, a := range acts {
		s = append(s, a.Text())
	}
	return strings.Join(s, ",")
}

// Text renders the group as `ovs-ofctl -O OpenFlow15 add-groups` reads it.
func (g *Group) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "group_id=%d,type=select", g.ID)
	if len(g.HashFields) > 0 {
		var fs []string
		for _, f := range g.HashFields {
			fs = append(fs, string(f))
		}
		fmt.Fprintf(&b, ",selection_method=hash,fields(%s)", strings.Join(fs, ","))
	}
	for i, id := range g.BucketIDs() {
		fmt.Fprintf(&b, ",bucket=bucket_id:%d,weight:%d,actions=%s", id, g.weight(i), bucketText(g.Buckets.Bucket(i)))
	}
	return b.String()
}

// GroupMessage returns the bundle message for command (add, modify,
// delete) on the group.
