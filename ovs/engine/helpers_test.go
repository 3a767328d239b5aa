package engine

import (
	"net"
	"net/netip"
	"testing"

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
