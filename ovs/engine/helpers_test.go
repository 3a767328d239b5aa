package engine

import (
	"net"
	"net/netip"
	"testing"

	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
)

// testConfig is the pipeline configuration of the OVS driver's defaults
// (its flags' default values).
func testConfig() pipeline.Config {
	mac, _ := net.ParseMAC("0a:53:59:00:00:01")
	return pipeline.Config{CtZone: 0x5359, ControllerID: 0x5359, RouterMAC: mac,
		VirtualIPs:  []netip.Addr{netip.MustParseAddr("169.254.255.253"), netip.MustParseAddr("fdff:5359::fffd")},
		NodePortIPs: []netip.Addr{netip.MustParseAddr("169.254.255.252"), netip.MustParseAddr("fdff:5359::fffc")}}
}

// testModel is a model over testConfig's pipeline, with the gateway on
// port 1 and the tunnel on port 2 (as the driver's render shows them).
func testModel(tb testing.TB) *Model {
	tb.Helper()
	cfg := testConfig()
	m := NewModel(cfg, true)
	m.SetPorts(Ports{GatewayPort: 1, GatewayMAC: cfg.RouterMAC, TunnelPort: 2})
	return m
}

// tcpFlow is a flow of table 6 matching TCP to port, and portGroup a
// group sending to port: the state tests' flows and groups.
func tcpFlow(port uint16) *of.Flow {
	return &of.Flow{Table: 6, Priority: 200, Goto: -1,
		Match:   []of.Match{of.EthType(of.EthIPv4), of.IPProto(of.ProtoTCP), of.L4Dst{Proto: of.ProtoTCP, Port: port}},
		Actions: []of.Action{of.Output(1)}}
}

func portGroup(id uint32, port of.Output) *of.Group {
	return &of.Group{ID: id, Buckets: of.BucketList{{port}}}
}

// dumped is what a dump of the bridge holding flows and groups reads.
func dumped(fs []*of.Flow, gs []*of.Group) ([]ofconn.FlowInfo, []ofconn.GroupInfo) {
	var flows []ofconn.FlowInfo
	for _, f := range fs {
		flows = append(flows, ofconn.FlowInfo{Table: f.Table, Cookie: f.Cookie()})
	}
	var groups []ofconn.GroupInfo
	for _, g := range gs {
		groups = append(groups, ofconn.GroupInfo{ID: g.ID, BucketIDs: g.BucketIDs()})
	}
	return flows, groups
}
