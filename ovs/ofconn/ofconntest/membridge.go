package ofconntest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"antrea.io/libOpenflow/openflow15"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
)

// Bridge is an OpenFlow bridge in memory, for tests that run without
// root or Open vSwitch: a Conn made by InMemory sends it the same bundle
// messages and dump requests a Conn sends OVS, byte for byte, and reads
// its answers with the same code.
//
// It is as strict as OVS 3.1 about what the driver could get wrong, and
// answers with the same OpenFlow errors (memagree_test.go holds it to a
// real OVS case by case):
//   - a bundle is all or nothing: its messages are applied in order to a
//     copy of the tables, which replaces them only if every one succeeded;
//   - when a message is added to the bundle: a match naming a field twice,
//     with value bits outside the mask, or a field before its
//     prerequisites (tcp_dst before nw_proto=6, ...); a goto_table to the
//     flow's own or an earlier table; a ct action in a flow that does not
//     match IPv4 or IPv6; a flow in table 254 or 255; two buckets of a
//     group with one bucket ID;
//   - when the bundle is committed: adding a group that exists, modifying
//     one that does not, a flow (or bucket) sending to a group that does
//     not exist;
//   - deleting a group deletes the flows that send to it, not the buckets
//     (of other groups) that do, nor is a bucket sending to a missing
//     group refused (Dangling lists them); deleting a group or flows that
//     do not exist is fine; a flow added with the table, priority and
//     match of an installed one replaces it.
//
// Anything else it does not model (other commands, instructions) fails
// the test with errNotModelled rather than being taken.
type Bridge struct {
	mu     sync.Mutex
	flows  map[flowKey]*memFlow
	groups map[uint32]*memGroup
	counts Counts
	reads  Reads
	fault  Fault
	refuse *Refusal
	link   *memLink // the link last dialled
	outs   []*openflow15.PacketOut
	// byCookie indexes flows by cookie, as OVS does, for requests under an
	// all-ones cookie mask; nil: to be built again (a commit changed flows).
	byCookie map[uint64][]*memFlow
	// beforeCount runs once, outside mu, as the next aggregate request
	// comes, before the bridge counts (BeforeNextCount).
	beforeCount func()
	// version is the software description it answers (SetVersion).
	version string
}

// ModelledVersion is the Open vSwitch version the bridge models and, until
// SetVersion, answers a switch description request with.
const ModelledVersion = "3.1.0"

// SetVersion has the bridge answer a switch description request with v,
// as another Open vSwitch release would.
func (br *Bridge) SetVersion(v string) {
	br.mu.Lock()
	br.version = v
	br.mu.Unlock()
}

// BeforeNextCount has f run as the next aggregate request comes, before
// the bridge counts its flows: what happens on another connection while
// OVS counts.
func (br *Bridge) BeforeNextCount(f func()) {
	br.mu.Lock()
	br.beforeCount = f
	br.mu.Unlock()
}

// Refusal is a fault the bridge meets at every commit until it is lifted:
// a bundle holding a message it picks is refused as OVS refuses a message
// it cannot apply (naming the message, or not).
type Refusal struct {
	// Picks takes what a message is about (Batch.Target).
	Picks func(cookie uint64, group uint32, isGroup bool) bool
	// Unnamed: the commit is refused without naming the message.
	Unnamed bool
}

// RefuseWhile makes the bridge meet r until RefuseWhile(nil).
func (br *Bridge) RefuseWhile(r *Refusal) {
	br.mu.Lock()
	br.refuse = r
	br.mu.Unlock()
}

// Counts counts what the bridge committed and refused.
type Counts struct {
	Bundles, FlowMods, GroupMods int
	Refused                      int // bundles refused
}

// Reads counts the flow reads the bridge answered: flow description
// requests under an all-ones cookie mask (lookups: OVS answers one from
// its cookie index) and under any other (scans: OVS visits every flow),
// and aggregate requests (OVS visits every flow).
type Reads struct {
	FlowLookups, FlowScans, Aggregates int
}

// Reads returns the flow reads answered so far.
func (br *Bridge) Reads() Reads {
	br.mu.Lock()
	defer br.mu.Unlock()
	return br.reads
}

// Fault is a failure the next bundle meets.
type Fault int

const (
	// NoFault: the bundle goes as the bridge decides.
	NoFault Fault = iota
	// LoseBeforeCommit: the connection is lost once the bundle is sent,
	// before the commit: nothing is applied.
	LoseBeforeCommit
	// LoseAfterCommit: the bundle is committed, then the connection is
	// lost before the answer reaches the caller.
	LoseAfterCommit
)

// NewBridge returns an empty bridge.
func NewBridge() *Bridge {
	return &Bridge{flows: map[flowKey]*memFlow{}, groups: map[uint32]*memGroup{}, version: ModelledVersion}
}

// InMemory returns a connection to an in-memory bridge. Bundles and dumps
// go over it as over a Conn to OVS; it has no packet-ins, and packet-outs
// fail with ofconn.ErrNotConnected.
func InMemory(br *Bridge) *ofconn.Conn {
	return ofconn.Over("in-memory bridge", func(context.Context) (ofconn.Link, error) {
		br.mu.Lock()
		defer br.mu.Unlock()
		br.link = &memLink{br: br}
		return br.link, nil
	})
}

// FailNext makes the next bundle meet f.
func (br *Bridge) FailNext(f Fault) {
	br.mu.Lock()
	br.fault = f
	br.mu.Unlock()
}

// Counts returns what the bridge has committed and refused so far.
func (br *Bridge) Counts() Counts {
	br.mu.Lock()
	defer br.mu.Unlock()
	return br.counts
}

// Apply commits a batch as another controller would (`ovs-ofctl
// --bundle`): for tests that change the bridge behind the driver's back.
func (br *Bridge) Apply(b *ofconn.Batch) error {
	br.mu.Lock()
	defer br.mu.Unlock()
	return br.transactLocked(b, nil)
}

// Dump lists the flows, then the groups, one a line, as `ovs-ofctl
// --no-stats dump-flows` and `dump-groups` lay them out (with the fields
// as switchyard writes them: dl_type=0x0800 where OVS prints ip), sorted
// by table, priority (highest first) and text, and by group ID.
func (br *Bridge) Dump() string {
	br.mu.Lock()
	defer br.mu.Unlock()
	flows := slices.Collect(maps.Values(br.flows))
	slices.SortFunc(flows, func(a, b *memFlow) int {
		if a.key.table != b.key.table {
			return int(a.key.table) - int(b.key.table)
		}
		if a.key.priority != b.key.priority {
			return int(b.key.priority) - int(a.key.priority)
		}
		return strings.Compare(a.text, b.text)
	})
	var sb strings.Builder
	for _, f := range flows {
		sb.WriteString(f.text + "\n")
	}
	for _, g := range br.sortedGroups() {
		sb.WriteString(g.text + "\n")
	}
	return sb.String()
}

// Dangling lists the groups whose buckets send to a group the bridge
// does not hold ("0x80000001 -> 0x80000002"): OVS takes them, and drops
// what such a bucket is chosen for.
func (br *Bridge) Dangling() []string {
	br.mu.Lock()
	defer br.mu.Unlock()
	var out []string
	for _, g := range br.sortedGroups() {
		for _, to := range g.sendsTo {
			if br.groups[to] == nil {
				out = append(out, fmt.Sprintf("%#x -> %#x", g.id, to))
			}
		}
	}
	return out
}

func (br *Bridge) sortedGroups() []*memGroup {
	groups := slices.Collect(maps.Values(br.groups))
	slices.SortFunc(groups, func(a, b *memGroup) int { return int(int64(a.id) - int64(b.id)) })
	return groups
}

// FlowDumpText is a flow as Bridge.Dump lists it.
func FlowDumpText(f *of.Flow) string {
	// f.Text() is "table=T,cookie=C,priority=P[,match],actions=A".
	head, actions, _ := strings.Cut(f.Text(), ",actions=")
	table, rest, _ := strings.Cut(head, ",")
	cookie, rest, _ := strings.Cut(rest, ",")
	return cookie + ", " + table + ", " + rest + " actions=" + actions
}

// GroupDumpText is a group as Bridge.Dump lists it.
func GroupDumpText(g *of.Group) string { return g.Text() }

// transactLocked decodes the batch's messages (refusing the bundle if any
// is refused when added), then commits them through commit (nil: at once).
func (br *Bridge) transactLocked(b *ofconn.Batch, around func(commit func() error) error) error {
	if b.Len() == 0 {
		return nil
	}
	msgs := make([]*bridgeMsg, b.Len())
	var refused *ofconn.RefusedError
	var buf []byte
	for i := range msgs {
		var err error
		if buf, err = b.Message(buf[:0], i, uint32(i+1)); err != nil {
			return b.Refuse(nil, i, "could not be encoded: "+err.Error())
		}
		if why := ofconn.Oversize(len(buf)); why != "" {
			return b.Refuse(nil, i, why)
		}
		m, err := decodeMessage(slices.Clone(buf)) // kept: buf is reused
		var r refusal
		switch {
		case errors.As(err, &r):
			refused = addRefusal(refused, b, i, r)
			continue
		case err != nil:
			return fmt.Errorf("%s: %w", b.Describe(i), err)
		}
		switch f, g := b.Object(i); {
		case m.flow != nil:
			m.flow.text = FlowDumpText(f)
		case m.group != nil && g != nil:
			m.group.text = GroupDumpText(g)
		}
		msgs[i] = m
	}
	if refused != nil {
		br.counts.Refused++
		return refused
	}
	commit := func() error {
		flows, groups := maps.Clone(br.flows), maps.Clone(br.groups)
		for i, m := range msgs {
			r, ok := apply(flows, groups, m)
			if ok && br.refuse != nil && br.refuse.Picks(b.Target(i)) {
				if br.refuse.Unnamed {
					br.counts.Refused++
					return &ofconn.RefusedError{Messages: b.Len(), Examples: []string{"the switch refused to commit the bundle: " + refusal{openflow15.ET_BUNDLE_FAILED, openflow15.BFC_MSG_FAILED}.Error()}}
				}
				r, ok = refusal{openflow15.ET_BAD_ACTION, openflow15.BAC_BAD_ARGUMENT}, false
			}
			if !ok {
				br.counts.Refused++
				return addRefusal(nil, b, i, r)
			}
		}
		br.flows, br.groups, br.byCookie = flows, groups, nil
		br.counts.Bundles++
		br.counts.FlowMods += len(b.FlowAdds) + len(b.FlowDeletes)
		br.counts.GroupMods += len(b.GroupAdds) + len(b.GroupModifies) + len(b.GroupDeletes)
		return nil
	}
	if around == nil {
		return commit()
	}
	return around(commit)
}

func addRefusal(r *ofconn.RefusedError, b *ofconn.Batch, i int, why refusal) *ofconn.RefusedError {
	return b.Refuse(r, i, why.Error())
}

// apply applies one message to the tables, as OVS commits it.
func apply(flows map[flowKey]*memFlow, groups map[uint32]*memGroup, m *bridgeMsg) (refusal, bool) {
	missing := func(ids []uint32) bool {
		return slices.ContainsFunc(ids, func(id uint32) bool { return groups[id] == nil })
	}
	switch {
	case m.kind == openflow15.Type_FlowMod && m.command == openflow15.FC_ADD:
		if missing(m.flow.groups) {
			return refusal{openflow15.ET_BAD_ACTION, openflow15.BAC_BAD_OUT_GROUP}, false
		}
		flows[m.flow.key] = m.flow
	case m.kind == openflow15.Type_FlowMod:
		for k, f := range flows {
			if (m.table == openflow15.OFPTT_ALL || m.table == k.table) && f.cookie&m.mask == m.cookie&m.mask {
				delete(flows, k)
			}
		}
	case m.command == openflow15.OFPGC_ADD:
		if groups[m.group.id] != nil {
			return refusal{openflow15.ET_GROUP_MOD_FAILED, openflow15.GMFC_GROUP_EXISTS}, false
		}
		groups[m.group.id] = m.group
	case m.command == openflow15.OFPGC_MODIFY:
		if groups[m.group.id] == nil {
			return refusal{openflow15.ET_GROUP_MOD_FAILED, openflow15.GMFC_UNKNOWN_GROUP}, false
		}
		groups[m.group.id] = m.group
	default: // delete
		for id := range groups {
			if id == m.group.id || m.group.id == openflow15.OFPG_ALL {
				delete(groups, id)
				for k, f := range flows {
					if slices.Contains(f.groups, id) {
						delete(flows, k)
					}
				}
			}
		}
	}
	return refusal{}, true
}

// PacketOuts returns the packet-outs sent so far and forgets them.
func (br *Bridge) PacketOuts() []*openflow15.PacketOut {
	br.mu.Lock()
	defer br.mu.Unlock()
	outs := br.outs
	br.outs = nil
	return outs
}
