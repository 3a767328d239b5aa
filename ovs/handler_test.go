package ovs

import (
	"fmt"
	"net"
	"net/netip"
	"testing"

	"antrea.io/libOpenflow/openflow15"
	"antrea.io/libOpenflow/util"
	"antrea.io/ofnet/ofctrl"
	"github.com/google/go-cmp/cmp"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn/ofconntest"
	of "github.com/switchyard-proxy/switchyard/ovs/openflow"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
)

// The driver as the bridge connection's handler, without root: a
// reconnection (ovs-vswitchd restarted and lost everything) makes the
// next round read the bridge back and repair it; the first connection
// does not.
func TestReconnectionRepairsTheBridge(t *testing.T) {
	br := ofconntest.NewBridge()
	md := newMemDriver(t, br, memCluster())
	md.mustSync()
	wipe := func() {
		t.Helper()
		unlock := md.lock()
		b := &ofconn.Batch{FlowDeletes: []ofconn.CookieMatch{{Cookie: of.CookieTag, Mask: of.CookieTagMask}},
			GroupDeletes: md.m.State().DesiredGroups()}
		unlock()
		if err := br.Apply(b); err != nil {
			t.Fatal(err)
		}
	}
	wipe()
	md.d.Connected(1) // the first connection: nothing to repair
	md.mustApply()
	if dump := br.Dump(); dump != "" {
		t.Fatalf("a round without a reconnection repaired the bridge:\n%s", dump)
	}
	md.d.Connected(2)
	md.mustApply()
	md.converged()
}

// Packet-ins are answered with a packet-out through the port they came
// in on: a connection to a frontend without endpoints gets a reset from
// the frontend, a neighbour solicitation the router's MAC.
func TestPacketInsAreAnswered(t *testing.T) {
	br := ofconntest.NewBridge()
	md := newMemDriver(t, br, memCluster())
	md.mustSync()
	podMAC := net.HardwareAddr{0x02, 0, 0, 0, 0, 0x05}
	router := md.m.Config().RouterMAC
	syn := frameOf(t, &layers.Ethernet{SrcMAC: podMAC, DstMAC: router, EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: ip("10.244.1.5"), DstIP: ip("10.96.0.14")},
		&layers.TCP{SrcPort: 40000, DstPort: 80, SYN: true, Seq: 100, DataOffset: 5})
	icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeNeighborSolicitation, 0)}
	ns := frameOf(t, &layers.Ethernet{SrcMAC: podMAC, DstMAC: layers.EthernetBroadcast, EthernetType: layers.EthernetTypeIPv6},
		&layers.IPv6{Version: 6, HopLimit: 255, NextHeader: layers.IPProtocolICMPv6, SrcIP: ip("fd00:244:1::5"), DstIP: ip("ff02::1:ff00:1")},
		icmp, &layers.ICMPv6NeighborSolicitation{TargetAddress: ip("fd00:244:1::1")})

	for _, tc := range []struct {
		name   string
		reason byte
		frame  []byte
		want   answer
	}{
		{"reject", pipeline.PacketInReject, syn, answer{InPort: 5, ToInPort: true, Src: "10.96.0.14", Dst: "10.244.1.5",
			SrcMAC: router.String(), TCP: "80>40000 RST ACK ack=101"}},
		{"neighbour", pipeline.PacketInNeighbor, ns, answer{InPort: 5, ToInPort: true, Src: "fd00:244:1::1", Dst: "fd00:244:1::5",
			SrcMAC: router.String(), NA: "fd00:244:1::1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pi := openflow15.NewPacketIn()
			pi.Data = util.NewBuffer(tc.frame)
			pi.Match.AddField(*openflow15.NewInPortField(5))
			md.d.PacketIn(&ofctrl.PacketIn{PacketIn: pi, UserData: []byte{tc.reason}})
			outs := br.PacketOuts()
			if len(outs) != 1 {
				t.Fatalf("%d packet-outs, want 1", len(outs))
			}
			if d := cmp.Diff(tc.want, answerOf(t, outs[0])); d != "" {
				t.Errorf("answer (-want +got):\n%s", d)
			}
		})
	}
}

func ip(s string) net.IP { return net.IP(netip.MustParseAddr(s).AsSlice()) }

func frameOf(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	for _, l := range ls {
		if c, ok := l.(interface {
			SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
		}); ok {
			c.SetNetworkLayerForChecksum(ls[1].(gopacket.NetworkLayer))
		}
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// answer is what a test reads of a packet-out.
type answer struct {
	InPort          uint32 // the match's in_port
	ToInPort        bool   // output to IN_PORT
	Src, Dst        string
	SrcMAC, TCP, NA string
}

func answerOf(t *testing.T, po *openflow15.PacketOut) (a answer) {
	t.Helper()
	for _, f := range po.Match.Fields {
		if p, ok := f.Value.(*openflow15.InPortField); ok {
			a.InPort = p.InPort
		}
	}
	for _, act := range po.Actions {
		if out, ok := act.(*openflow15.ActionOutput); ok && out.Port == openflow15.P_IN_PORT {
			a.ToInPort = true
		}
	}
	data, err := po.Data.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	p := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
	if eth, ok := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet); ok {
		a.SrcMAC = eth.SrcMAC.String()
	}
	if n := p.NetworkLayer(); n != nil {
		a.Src, a.Dst = n.NetworkFlow().Src().String(), n.NetworkFlow().Dst().String()
	}
	if tcp, ok := p.Layer(layers.LayerTypeTCP).(*layers.TCP); ok {
		a.TCP = fmt.Sprintf("%d>%d", tcp.SrcPort, tcp.DstPort)
		if tcp.RST {
			a.TCP += " RST"
		}
		if tcp.ACK {
			a.TCP += fmt.Sprintf(" ACK ack=%d", tcp.Ack)
		}
	}
	if na, ok := p.Layer(layers.LayerTypeICMPv6NeighborAdvertisement).(*layers.ICMPv6NeighborAdvertisement); ok {
		a.NA = na.TargetAddress.String()
	}
	return a
}
