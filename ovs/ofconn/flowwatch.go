package ofconn

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"antrea.io/libOpenflow/openflow15"
	"k8s.io/klog/v2"
)

// Flow changes made behind the driver's back, as they happen.
//
// WatchFlows asks the switch for a flow monitor (OpenFlow 1.4's
// OFPMP_FLOW_MONITOR, in 1.5 unchanged) on the bulk link, the connection
// that commits the driver's bundles: every flow added, modified or
// removed, in every table. OVS reports a change made by the monitor's own
// connection abbreviated (one ABBREV event for a batch of changes, with
// no flow), so what arrives in full was made by someone else: another
// controller, ovs-ofctl, OVS itself (a learned flow, a timeout, a group
// deleted with its flows). What happened while no monitor was armed
// (before the first link, between two) or while the switch paused it
// (its backlog of updates to send too large) is not known: the watcher
// hears FlowsUnknown then. OVS names no requester for the flows a
// group's deletion takes with it: a bundle that deletes a group whose
// flows it keeps has them reported as another's removal (the driver
// deletes a group's flows in the bundle that deletes it, which reports
// nothing; TestFlowMonitorReportsOthersChangesOnly).

// FlowChangeKind is what happened to a flow, or that what happened is
// not known.
type FlowChangeKind uint8

const (
	FlowAdded FlowChangeKind = iota + 1
	FlowRemoved
	FlowModified
	// FlowsUnknown: changes may have gone unreported (a monitor armed
	// anew, its link lost, the switch's pause, an update not understood).
	FlowsUnknown
)

// FlowChange is one flow another connection changed: its table and
// cookie (zero for FlowsUnknown).
type FlowChange struct {
	Kind   FlowChangeKind
	Table  uint8
	Cookie uint64
}

// The flow monitor request and update (OpenFlow 1.4 section 7.3.5.19,
// as OVS encodes them for 1.4 and 1.5).
const (
	monitorID         = 1
	monitorFlags      = 1<<1 | 1<<2 | 1<<3 // OFPFMF_ADD, _REMOVED, _MODIFY; abbreviated own changes
	monitorAllTables  = 0xff
	monitorCommandAdd = 0
	updateFullLen     = 24 // length, event, table, reason, timeouts, priority, zeros, cookie
	updateTableAt     = 4
	updateCookieAt    = 16
)

// Flow monitor events (ofp_flow_update_event).
const (
	eventAdded    = 1
	eventRemoved  = 2
	eventModified = 3
	eventAbbrev   = 4
	eventPaused   = 5
	eventResumed  = 6
)

// watchArmTimeout bounds arming a monitor on a new link.
const watchArmTimeout = 10 * time.Second

// flowWatcher is a Link that can report other connections' flow changes
// (bulkConn; an in-memory bridge's link cannot).
type flowWatcher interface {
	WatchFlows(ctx context.Context, watch func(FlowChange)) error
}

// WatchFlows has watch hear the flow changes other connections make, on
// this link and every later one; watch is called from a link's reader
// and must not block. Watching reports whether a monitor is armed now.
func (c *Conn) WatchFlows(watch func(FlowChange)) {
	c.bulkMu.Lock()
	defer c.bulkMu.Unlock()
	c.watch = watch
	if c.bulk != nil && !c.bulk.Broken() {
		c.armWatch(c.bulk)
	}
}

// Watching reports whether a flow monitor is armed on the open link: if
// not, changes behind the driver's back go unreported. A link lost
// between its monitor's arming and its recording is not watching.
func (c *Conn) Watching() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watched != nil && !c.watched.Broken()
}

// armWatch arms a monitor on a new link l (under bulkMu), then tells the
// watcher that what happened before it is not known. A link that cannot
// watch, or a switch that refuses, leaves the connection unwatched.
func (c *Conn) armWatch(l Link) {
	w, ok := l.(flowWatcher)
	if c.watch == nil || !ok {
		return
	}
	watch := c.watch
	ctx, cancel := context.WithTimeout(context.Background(), watchArmTimeout)
	defer cancel()
	err := w.WatchFlows(ctx, func(ch FlowChange) {
		if ch.Kind == FlowsUnknown {
			c.mu.Lock()
			if c.watched == l { // a later link's monitor stays
				c.watched = nil
			}
			c.mu.Unlock()
		}
		watch(ch)
	})
	if err != nil {
		klog.ErrorS(err, "Could not watch the bridge's flows; the periodic audit reads them all", "socket", c.socket)
		return
	}
	c.mu.Lock()
	c.watched = l
	c.mu.Unlock()
	watch(FlowChange{Kind: FlowsUnknown})
}

// WatchFlows implements flowWatcher: it asks for the monitor and waits
// for the switch's (empty) first reply. From then on the reader hands
// each update to watch; FlowsUnknown, as its last call, when the
// connection ends.
func (bc *bulkConn) WatchFlows(ctx context.Context, watch func(FlowChange)) error {
	bc.partsMu.Lock()
	bc.watch = watch
	bc.partsMu.Unlock()
	err := bc.Multipart(ctx, openflow15.MultipartType_FlowMonitor, monitorRequest(), func([]byte) error { return nil })
	if err != nil {
		bc.partsMu.Lock()
		bc.watch = nil
		bc.partsMu.Unlock()
		return fmt.Errorf("arming a flow monitor: %w", err)
	}
	return nil
}

// monitorRequest is a flow monitor request for every flow of every
// table: no initial state, additions, removals and modifications, own
// changes abbreviated, an empty match.
func monitorRequest() []byte {
	b := binary.BigEndian.AppendUint32(nil, monitorID)
	b = binary.BigEndian.AppendUint32(b, openflow15.P_ANY) // out_port
	b = binary.BigEndian.AppendUint32(b, openflow15.OFPG_ANY)
	b = binary.BigEndian.AppendUint16(b, monitorFlags)
	b = append(b, monitorAllTables, monitorCommandAdd)
	return append(b, 0, 1, 0, 4, 0, 0, 0, 0) // ofp_match: OXM, no field, padded
}

// watchUpdates hands a flow monitor update's entries to watch (from the
// reader, under partsMu): the ones other connections made; one
// FlowsUnknown for a pause, a resumption, or an update not understood.
func watchUpdates(body []byte, watch func(FlowChange)) {
	if len(body) < mpHeaderLen {
		watch(FlowChange{Kind: FlowsUnknown})
		return
	}
	err := replyEntries(openflow15.MultipartType_FlowMonitor, body[mpHeaderLen:], func(e []byte) error {
		ch, ok, err := flowUpdate(e)
		if ok {
			watch(ch)
		}
		return err
	})
	if err != nil {
		klog.V(2).InfoS("A flow monitor update not understood", "err", err)
		watch(FlowChange{Kind: FlowsUnknown})
	}
}

// flowUpdate decodes one update entry; ok is false for one that says
// nothing of others' changes (an abbreviated own change).
func flowUpdate(e []byte) (ch FlowChange, ok bool, err error) {
	if len(e) < 4 {
		return ch, false, fmt.Errorf("a flow update of %d bytes", len(e))
	}
	switch event := binary.BigEndian.Uint16(e[2:]); event {
	case eventAdded, eventRemoved, eventModified:
		if len(e) < updateFullLen {
			return ch, false, fmt.Errorf("a flow update (event %d) of %d bytes", event, len(e))
		}
		kind := FlowAdded + FlowChangeKind(event-eventAdded) // in the same order
		return FlowChange{Kind: kind, Table: e[updateTableAt], Cookie: binary.BigEndian.Uint64(e[updateCookieAt:])}, true, nil
	case eventAbbrev:
		return ch, false, nil
	case eventPaused, eventResumed:
		return FlowChange{Kind: FlowsUnknown}, true, nil
	default:
		return ch, false, fmt.Errorf("a flow update of event %d", event)
	}
}

// isFlowMonitorReply reports whether a multipart reply's body is a flow
// monitor's.
func isFlowMonitorReply(body []byte) bool {
	return len(body) >= 2 && binary.BigEndian.Uint16(body) == openflow15.MultipartType_FlowMonitor
}
