package ovs

import (
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"k8s.io/component-base/metrics"
)

// connCollector exports the bridge connection's own counts (ofconn.Stats)
// when scraped: the flow and group mods it committed, and the packet-ins
// it dropped because the handler's queue was full (rejects and neighbour
// answers not sent).
type connCollector struct {
	metrics.BaseStableCollector
	conn *ofconn.Conn
}

var (
	flowModsDesc = metrics.NewDesc("switchyard_ovs_flow_mods_total",
		"Flow adds and deletes in the bundles OVS committed.", nil, nil, metrics.ALPHA, "")
	groupModsDesc = metrics.NewDesc("switchyard_ovs_group_mods_total",
		"Group adds, modifies and deletes in the bundles OVS committed.", nil, nil, metrics.ALPHA, "")
	droppedPacketInsDesc = metrics.NewDesc("switchyard_ovs_packet_ins_dropped_total",
		"Packet-ins (rejects, neighbour solicitations) dropped unanswered because the driver's queue for them was full.", nil, nil, metrics.ALPHA, "")
)

func newConnCollector(conn *ofconn.Conn) *connCollector { return &connCollector{conn: conn} }

// DescribeWithStability implements metrics.StableCollector.
func (c *connCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- flowModsDesc
	ch <- groupModsDesc
	ch <- droppedPacketInsDesc
}

// CollectWithStability implements metrics.StableCollector.
func (c *connCollector) CollectWithStability(ch chan<- metrics.Metric) {
	s := c.conn.Stats()
	ch <- metrics.NewLazyConstMetric(flowModsDesc, metrics.CounterValue, float64(s.FlowMods))
	ch <- metrics.NewLazyConstMetric(groupModsDesc, metrics.CounterValue, float64(s.GroupMods))
	ch <- metrics.NewLazyConstMetric(droppedPacketInsDesc, metrics.CounterValue, float64(s.DroppedPacketIns))
}
