package openflow

import (
	"fmt"
	"hash/fnv"
	"strings"

	"antrea.io/libOpenflow/openflow15"
	"antrea.io/ofnet/ofctrl"
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
}

// Text renders the flow without its cookie, as ovs-ofctl reads it.
func (f *Flow) body() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table=%d,priority=%d", f.Table, f.Priority)
	for _, m := range f.Match {
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

// Cookie is the flow's cookie: the tag, the flow kind and a hash of the
// flow's whole text, so equal cookies mean equal flows.
func (f *Flow) Cookie() uint64 {
	h := fnv.New64a()
	h.Write([]byte(f.body()))
	return CookieTag | CookieKindFlow | h.Sum64()&cookieHashMask
}

// Text renders the flow with its cookie, as `ovs-ofctl add-flows` reads it.
func (f *Flow) Text() string {
	b := f.body()
	i := strings.Index(b, ",")
	return fmt.Sprintf("%s,cookie=0x%x%s", b[:i], f.Cookie(), b[i:])
}

// FlowMod returns the OpenFlow message that adds (or replaces) the flow.
func (f *Flow) FlowMod() (*openflow15.FlowMod, error) {
	fm := openflow15.NewFlowMod()
	fm.Command = openflow15.FC_ADD
	fm.TableId = f.Table
	fm.Priority = f.Priority
	fm.Cookie = f.Cookie()
	for _, m := range f.Match {
		if err := m.add(&fm.Match); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Text(), err)
		}
	}
	if len(f.Actions) > 0 {
		ia := openflow15.NewInstrApplyActions()
		for _, a := range f.Actions {
			oa, err := a.of()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", a.Text(), err)
			}
			if oa != nil {
				if err := ia.AddAction(oa, false); err != nil {
					return nil, err
				}
			}
		}
		if len(ia.Actions) > 0 {
			fm.AddInstruction(ia)
		}
	}
	if f.Goto >= 0 {
		fm.AddInstruction(openflow15.NewInstrGotoTable(uint8(f.Goto)))
	}
	return fm, nil
}

// DeleteByCookie returns a message deleting every flow whose cookie
// matches cookie under mask, in every table (no instructions: a delete
// with instructions corrupts libOpenflow's framing).
func DeleteByCookie(cookie, mask uint64) *openflow15.FlowMod {
	fm := openflow15.NewFlowMod()
	fm.Command = openflow15.FC_DELETE
	fm.TableId = openflow15.OFPTT_ALL
	fm.Cookie = cookie
	fm.CookieMask = mask
	return fm
}

// Group is a select group whose buckets are tried with equal weight.
type Group struct {
	ID      uint32
	Buckets [][]Action
}

func bucketText(acts []Action) string {
	var s []string
	for _, a := range acts {
		s = append(s, a.Text())
	}
	return strings.Join(s, ",")
}

// BucketID is a bucket's ID: a hash of its actions, so a group's content
// can be told from its bucket IDs alone.
func BucketID(acts []Action) uint32 {
	h := fnv.New32a()
	h.Write([]byte(bucketText(acts)))
	return h.Sum32() & 0x7fffffff
}

// Text renders the group as `ovs-ofctl -O OpenFlow15 add-groups` reads it.
func (g *Group) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "group_id=%d,type=select", g.ID)
	for _, bk := range g.Buckets {
		fmt.Fprintf(&b, ",bucket=bucket_id:%d,weight:100,actions=%s", BucketID(bk), bucketText(bk))
	}
	return b.String()
}

// GroupMessage returns the bundle message for command (add, modify,
// delete) on the group.
func (g *Group) GroupMessage(command int) (*ofctrl.GroupBundleMessage, error) {
	og := ofctrl.NewGroup(g.ID, ofctrl.GroupSelect, nil)
	if command != openflow15.OFPGC_DELETE {
		for _, bk := range g.Buckets {
			b := openflow15.NewBucket(BucketID(bk))
			for _, a := range bk {
				oa, err := a.of()
				if err != nil {
					return nil, fmt.Errorf("group %d: %s: %w", g.ID, a.Text(), err)
				}
				b.AddAction(oa)
			}
			b.AddProperty(openflow15.NewGroupBucketPropWeight(100))
			og.AddBuckets(b)
		}
	}
	return og.GetBundleMessage(command), nil
}
