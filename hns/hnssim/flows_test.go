package hnssim_test

import (
	"net/netip"
	"testing"

	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

// TestEstablishedConnectionsAfterScaling pins rules V1-V3: connections are
// opened through a load balancer of three backends, one backend is
// removed (by ModifyLoadBalancer, or by delete and create as on builds
// without it), and the connections' next packets are judged.
func TestEstablishedConnectionsAfterScaling(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from     hnssim.SourceKind
		src      netip.Addr
		pmFlags  uint32
		recreate bool
		moved    bool // some connection to a remaining backend broke
	}{
		{"V1 from outside with VipExternalIP, modified", hnssim.FromExternal, evalOutside, hns.PortFlagVipExternalIP, false, false},
		{"V1 from outside with VipExternalIP, recreated", hnssim.FromExternal, evalOutside, hns.PortFlagVipExternalIP, true, false},
		{"V1 from outside without VipExternalIP: balanced again", hnssim.FromExternal, evalOutside, 0, false, true},
		{"V2 from a pod without VipExternalIP", hnssim.FromPod, evalPod, 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := evalWorld(t, "L2Bridge", lbSpec{vip: "203.0.113.20", port: 80, pmFlags: tc.pmFlags,
				backends: []string{"l:10.244.1.5", "l:10.244.1.6", "l:10.244.1.8"}})
			lbs, _ := sim.LoadBalancers()
			lb := lbs[0]
			flows := hnssim.NewFlows()
			packet := func(c uint64) hnssim.Packet {
				return hnssim.Packet{From: tc.from, Src: tc.src, Dst: netip.MustParseAddrPort("203.0.113.20:80"), Protocol: 6, Conn: c}
			}
			went := map[uint64]netip.AddrPort{}
			for c := range uint64(30) {
				v := flows.Open(sim, packet(c))
				if !v.Connected {
					t.Fatalf("connection %d: %+v", c, v)
				}
				went[c] = v.Backend
			}
			gone := lb.HostComputeEndpoints[2]
			lb.HostComputeEndpoints = lb.HostComputeEndpoints[:2]
			if tc.recreate {
				if err := sim.DeleteLoadBalancer(lb.ID); err != nil {
					t.Fatal(err)
				}
				lb.ID = ""
				if _, err := sim.CreateLoadBalancer(&lb); err != nil {
					t.Fatal(err)
				}
			} else if _, err := sim.UpdateLoadBalancer(lb.ID, &lb); err != nil {
				t.Fatal(err)
			}
			goneIP := map[string]bool{}
			n, _ := sim.Network("cbr0")
			eps, _ := sim.Endpoints(n.ID)
			for _, ep := range eps {
				if ep.ID == gone {
					goneIP[ep.IPConfigurations[0].IPAddress] = true
				}
			}
			moved := 0
			for c, was := range went {
				v := flows.Next(sim, packet(c))
				switch {
				case goneIP[was.Addr().String()]:
					if v.Connected {
						t.Fatalf("V3: connection %d to the removed backend %v still connected: %+v", c, was, v)
					}
				case !v.Connected:
					moved++
				case v.Backend != was:
					t.Fatalf("connection %d went to %v, then to %v", c, was, v.Backend)
				}
			}
			if (moved > 0) != tc.moved {
				t.Fatalf("%d connections to a remaining backend broke; want some: %v", moved, tc.moved)
			}
		})
	}
}
