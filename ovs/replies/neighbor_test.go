package replies

import (
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/gopacket/layers"
)

func TestNeighborAdvert(t *testing.T) {
	solicit := func(target net.IP) *layers.ICMPv6NeighborSolicitation {
		return &layers.ICMPv6NeighborSolicitation{TargetAddress: target,
			Options: layers.ICMPv6Options{{Type: layers.ICMPv6OptSourceAddress, Data: clientMAC}}}
	}
	icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeNeighborSolicitation, 0)}
	gateway := net.ParseIP("fd00:10:244:1::1")
	dad := frame(t, true, icmp, solicit(client6))
	copy(dad[14+8:14+24], net.IPv6unspecified) // from ::, as duplicate address detection sends
	for _, tc := range []struct {
		name string
		in   []byte
		want *reply
	}{
		{"a solicitation is answered with the router's MAC", frame(t, true, icmp, solicit(gateway)), &reply{
			SrcMAC: routerMAC.String(), DstMAC: clientMAC.String(), Src: gateway.String(), Dst: client6.String(), TTL: 255,
			ICMP: "NeighborAdvertisement", NATarget: gateway.String(), NAFlags: 0xe0,
			NAOpts: layers.ICMPv6Option{Type: layers.ICMPv6OptTargetAddress, Data: routerMAC}.String()}},
		{"a requester asking about its own address", frame(t, true, icmp, solicit(client6)), nil},
		{"duplicate address detection", dad, nil},
		{"not a solicitation", frame(t, true, &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeEchoRequest, 0)}), nil},
		{"IPv4", frame(t, false, &layers.UDP{SrcPort: 1, DstPort: 2}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, readReply(t, NeighborAdvert(tc.in, routerMAC))); d != "" {
				t.Errorf("reply (-want +got):\n%s", d)
			}
		})
	}
}
