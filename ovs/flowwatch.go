package ovs

import (
	"sync/atomic"
	"time"

	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"k8s.io/component-base/metrics"
)

// Which audits read the bridge.
//
// The periodic audit reads all of the driver's flows and groups back
// from OVS (~3 s at 30k Services, ~10 s at 100k, most of it
// ovs-vswitchd's CPU, docs/scale.md) to find what others changed behind
// the driver's back. While the bundles' link carries a flow monitor
// (ofconn.Conn.WatchFlows), OVS itself reports every flow another
// connection adds, modifies or removes, so an audit reads the bridge only
// when the monitor reported a change to one of the driver's flows, or
// could not say (armed anew, its link lost, paused by OVS), or when the
// last audit that read it is bridgeAuditPeriod old: groups have no
// monitor (a group deleted takes its flows with it, which the monitor
// reports; a group's buckets changed in place wait for that period). The
// other audits sync the host only. Without a monitor (an in-memory
// bridge, a switch that refuses one) every audit reads the bridge.

// bridgeAuditPeriod is how old the last audit that read the bridge may
// be while the monitor reports nothing: kube-proxy's nftables mode
// rewrites its whole table once an hour (FullSyncPeriod) and leaves
// drift inside it until then, as hostnet.TableRewritePeriod does here.
const bridgeAuditPeriod = time.Hour

// flowWatch is what the monitor reported since an audit last read the
// bridge; set from the link's reader, so atomic.
type flowWatch struct {
	suspect atomic.Bool // a change to the driver's flows, or changes unknown
	events  *metrics.CounterVec
}

// Foreign change kinds (switchyard_ovs_foreign_flow_changes_total's
// event label).
var foreignEvents = map[ofconn.FlowChangeKind]string{
	ofconn.FlowAdded: "added", ofconn.FlowRemoved: "removed", ofconn.FlowModified: "modified", ofconn.FlowsUnknown: "unknown",
}

func newFlowWatch() *flowWatch {
	return &flowWatch{events: metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "switchyard", Subsystem: "ovs", Name: "foreign_flow_changes_total",
		Help: "Changes to the driver's flows that OVS's flow monitor reported made by another connection, by event: added, " +
			"modified, removed; unknown: the monitor could not say (armed anew, its link lost, paused by OVS). Each makes the next periodic audit read the bridge.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"event"})}
}

// changed hears one change from the monitor: one to a pipeline flow, or
// an unknown, makes the next audit read the bridge; learned flows and
// others' flows are not the driver's to audit.
func (w *flowWatch) changed(ch ofconn.FlowChange) {
	pipeline, mask := of.PipelineCookies()
	if ch.Kind != ofconn.FlowsUnknown && ch.Cookie&mask != pipeline {
		return
	}
	w.suspect.Store(true)
	w.events.WithLabelValues(foreignEvents[ch.Kind]).Inc()
}

// register adds the counter to reg (nil: nowhere), every event at 0.
func (w *flowWatch) register(reg metrics.KubeRegistry) {
	if reg == nil {
		return
	}
	reg.MustRegister(w.events)
	for _, e := range foreignEvents {
		w.events.WithLabelValues(e)
	}
}

// bridgeAuditDueLocked reports whether the audit starting now reads the
// bridge, and if so takes back what the monitor reported (changes after
// this are the next audit's). Under the driver's lock.
func (d *Driver) bridgeAuditDueLocked() bool {
	due := !d.conn.Watching() || d.audit.bridgeRead.IsZero() || time.Since(d.audit.bridgeRead) >= bridgeAuditPeriod
	if d.watch.suspect.Swap(false) {
		due = true
	}
	return due
}
