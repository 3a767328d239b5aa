package hnssim_test

import (
	"net/netip"
	"testing"

	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

// TestEvaluatorRules pins each rule Evaluate models, one load balancer
// at a time.
func TestEvaluatorRules(t *testing.T) {
	host := mustAddr("192.168.0.11")
	pod := mustAddr("10.244.1.9")
	outside := mustAddr("198.51.100.5")
	type lbSpec struct {
		vip      string // "" for a NodePort-style balancer
		port     uint16
		flags    uint32
		pmFlags  uint32
		dist     uint32
		backends []string // "l:IP" local, "r:IP" remote (with a provider address on overlay)
	}
	cases := []struct {
		name     string
		network  string
		lb       lbSpec
		from     hnssim.SourceKind
		src      netip.Addr
		dst      string
		balanced bool
		dstSeen  string // "" to skip
		dsr      bool
	}{
		{"VIP from a pod", "L2Bridge", lbSpec{vip: "10.96.0.10", port: 80, backends: []string{"l:10.244.1.5"}},
			hnssim.FromPod, pod, "10.96.0.10:80", true, "10.244.1.5", false},
		{"VIP, other port", "L2Bridge", lbSpec{vip: "10.96.0.10", port: 80, backends: []string{"l:10.244.1.5"}},
			hnssim.FromPod, pod, "10.96.0.10:81", false, "", false},
		{"ILB: not from outside", "L2Bridge", lbSpec{vip: "10.96.0.10", port: 80, pmFlags: hns.PortFlagILB, backends: []string{"l:10.244.1.5"}},
			hnssim.FromExternal, outside, "10.96.0.10:80", false, "", false},
		{"ILB: from a pod", "L2Bridge", lbSpec{vip: "10.96.0.10", port: 80, pmFlags: hns.PortFlagILB, backends: []string{"l:10.244.1.5"}},
			hnssim.FromPod, pod, "10.96.0.10:80", true, "", false},
		{"NodePort from outside", "L2Bridge", lbSpec{port: 30080, pmFlags: hns.PortFlagVipExternalIP, backends: []string{"l:10.244.1.5"}},
			hnssim.FromExternal, outside, "192.168.0.11:30080", true, "", false},
		{"NodePort from a pod needs LocalRoutedVIP", "L2Bridge", lbSpec{port: 30080, pmFlags: hns.PortFlagVipExternalIP, backends: []string{"l:10.244.1.5"}},
			hnssim.FromPod, pod, "192.168.0.11:30080", false, "", false},
		{"NodePort from a pod with LocalRoutedVIP", "L2Bridge", lbSpec{port: 30080, pmFlags: hns.PortFlagVipExternalIP | hns.PortFlagLocalRoutedVIP, backends: []string{"l:10.244.1.5"}},
			hnssim.FromPod, pod, "192.168.0.11:30080", true, "", false},
		{"NodePort from the node itself: never", "L2Bridge", lbSpec{port: 30080, pmFlags: hns.PortFlagVipExternalIP | hns.PortFlagLocalRoutedVIP, backends: []string{"l:10.244.1.5"}},
			hnssim.FromNode, host, "192.168.0.11:30080", false, "", false},
		{"NodePort on an address the host does not have", "L2Bridge", lbSpec{port: 30080, pmFlags: hns.PortFlagVipExternalIP, backends: []string{"l:10.244.1.5"}},
			hnssim.FromExternal, outside, "192.168.0.99:30080", false, "", false},
		{"NodePort: an IPv4 balancer does not take IPv6 traffic", "L2Bridge", lbSpec{port: 30080, pmFlags: hns.PortFlagVipExternalIP, backends: []string{"l:10.244.1.5"}},
			hnssim.FromExternal, mustAddr("2001:db8::5"), "[fd00::11]:30080", false, "", false},
		{"NodePort: the IPv6 flag takes IPv6 traffic", "L2Bridge", lbSpec{port: 30080, flags: hns.LBFlagIPv6, pmFlags: hns.PortFlagVipExternalIP, backends: []string{"l:fd00:244:1::5"}},
			hnssim.FromExternal, mustAddr("2001:db8::5"), "[fd00::11]:30080", true, "", false},
		{"DSR is reported", "L2Bridge", lbSpec{vip: "203.0.113.10", port: 80, flags: hns.LBFlagDSR, pmFlags: hns.PortFlagVipExternalIP, backends: []string{"l:10.244.1.5"}},
			hnssim.FromExternal, outside, "203.0.113.10:80", true, "10.244.1.5", true},
		{"PreserveDIP: the backend sees the VIP", "L2Bridge", lbSpec{vip: "203.0.113.10", port: 80, flags: hns.LBFlagDSR, pmFlags: hns.PortFlagVipExternalIP | hns.PortFlagPreserveDIP, backends: []string{"l:10.244.1.5"}},
			hnssim.FromExternal, outside, "203.0.113.10:80", true, "203.0.113.10", true},
		{"overlay remote backend with a provider address", "Overlay", lbSpec{vip: "10.96.0.10", port: 80, backends: []string{"r:10.244.2.7"}},
			hnssim.FromPod, pod, "10.96.0.10:80", true, "10.244.2.7", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sim := hnssim.New(hnssim.Windows2022)
			n := sim.AddNetwork("cbr0", tc.network, hns.RemoteSubnet{DestinationPrefix: "10.244.2.0/24", ProviderAddress: "192.168.0.12"})
			sim.AddHostIP(host)
			sim.AddHostIP(mustAddr("fd00::11"))
			var ids []string
			for _, b := range tc.lb.backends {
				kind, ip := b[:1], b[2:]
				switch kind {
				case "l":
					ids = append(ids, sim.AddLocalEndpoint("cbr0", "pod", ip).ID)
				case "r":
					ep, err := sim.CreateEndpoint(n.ID, hns.RemoteEndpoint(n, mustAddr(ip), host))
					if err != nil {
						t.Fatal(err)
					}
					ids = append(ids, ep.ID)
				}
			}
			lb := &hns.LoadBalancer{HostComputeEndpoints: ids, Flags: tc.lb.flags, SchemaVersion: hns.V2,
				PortMappings: []hns.PortMapping{{Protocol: 6, InternalPort: 8080, ExternalPort: tc.lb.port, Flags: tc.lb.pmFlags, DistributionType: tc.lb.dist}}}
			if tc.lb.vip != "" {
				lb.FrontendVIPs = []string{tc.lb.vip}
			}
			if _, err := sim.CreateLoadBalancer(lb); err != nil {
				t.Fatal(err)
			}
			v := sim.Evaluate(hnssim.Packet{From: tc.from, Src: tc.src, Dst: netip.MustParseAddrPort(tc.dst), Protocol: 6, Conn: 1})
			if v.Balanced != tc.balanced || (tc.balanced && v.DSR != tc.dsr) || (tc.dstSeen != "" && v.DstSeen.String() != tc.dstSeen) {
				t.Fatalf("verdict %+v; want balanced=%v dsr=%v dstSeen=%q", v, tc.balanced, tc.dsr, tc.dstSeen)
			}
			if v.Balanced && v.Backend.Port() != 8080 {
				t.Fatalf("backend %v: not the internal port", v.Backend)
			}
		})
	}
}
