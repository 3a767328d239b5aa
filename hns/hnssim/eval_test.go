package hnssim_test

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

// The evaluator's fixture: this host, one of its pods, a client outside,
// and a remote subnet held by another node.
var (
	evalHost    = mustAddr("192.168.0.11")
	evalPeer    = "192.168.0.12" // holds 10.244.2.0/24
	evalPod     = mustAddr("10.244.1.9")
	evalOutside = mustAddr("198.51.100.5")
)

// lbSpec is one load balancer of an evaluator test.
type lbSpec struct {
	vip       string // "" for a NodePort-style balancer
	port      uint16
	flags     uint32
	pmFlags   uint32
	dist      uint32
	sourceVIP string
	// backends: "l:IP" a local pod, "r:IP" a remote endpoint with the
	// provider address its subnet gives, "r:IP@PA" with provider address PA.
	backends []string
}

// evalWorld is a simulator with the fixture and lb programmed.
func evalWorld(t *testing.T, network string, lb lbSpec) *hnssim.Sim {
	t.Helper()
	sim := hnssim.New(hnssim.Windows2025)
	n := sim.AddNetwork("cbr0", network, hns.RemoteSubnet{DestinationPrefix: "10.244.2.0/24", ProviderAddress: evalPeer})
	sim.AddHostIP(evalHost)
	sim.AddHostIP(mustAddr("fd00::11"))
	sim.AddLocalEndpoint("cbr0", "client", evalPod.String())
	sim.AddLocalEndpoint("cbr0", "other", "10.244.1.7")
	if lb.port == 0 {
		return sim
	}
	var ids []string
	for _, b := range lb.backends {
		kind, ip := b[:1], b[2:]
		if kind == "l" {
			ids = append(ids, sim.AddLocalEndpoint("cbr0", "pod-"+ip, ip).ID)
			continue
		}
		ip, pa, _ := strings.Cut(ip, "@")
		if pa == "" {
			pa = evalPeer
		}
		ep := &hns.Endpoint{Name: "remote-" + ip, IPConfigurations: []hns.IPConfig{{IPAddress: ip}}, Flags: hns.EndpointFlagRemote, SchemaVersion: hns.V2}
		if network == "Overlay" {
			settings, _ := json.Marshal(hns.ProviderAddressSettings{ProviderAddress: pa})
			ep.Policies = []hns.EndpointPolicy{{Type: "ProviderAddress", Settings: settings}}
		}
		created, err := sim.CreateEndpoint(n.ID, ep)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, created.ID)
	}
	spec := &hns.LoadBalancer{HostComputeEndpoints: ids, Flags: lb.flags, SchemaVersion: hns.V2, SourceVIP: lb.sourceVIP,
		PortMappings: []hns.PortMapping{{Protocol: 6, InternalPort: 8080, ExternalPort: lb.port, Flags: lb.pmFlags, DistributionType: lb.dist}}}
	if lb.vip != "" {
		spec.FrontendVIPs = []string{lb.vip}
	}
	if _, err := sim.CreateLoadBalancer(spec); err != nil {
		t.Fatal(err)
	}
	return sim
}

// TestEvaluatorRules pins each rule of rules.go, one load balancer at a
// time; each name starts with the rule it shows.
func TestEvaluatorRules(t *testing.T) {
	const nodePortFlags = hns.PortFlagVipExternalIP | hns.PortFlagLocalRoutedVIP
	clusterIP := lbSpec{vip: "10.96.0.10", port: 80, sourceVIP: "10.244.1.254", backends: []string{"l:10.244.1.5"}}
	nodePort := lbSpec{port: 30080, pmFlags: nodePortFlags, sourceVIP: "192.168.0.11", backends: []string{"l:10.244.1.5"}}
	cases := []struct {
		name      string
		network   string
		lb        lbSpec
		from      hnssim.SourceKind
		src       netip.Addr
		dst       string
		connected bool
		balanced  bool
		srcSeen   string // "" to skip
		dstSeen   string // "" to skip
		dsr       bool
		toHost    bool
	}{
		{"F1 a VIP from a pod", "L2Bridge", clusterIP, hnssim.FromPod, evalPod, "10.96.0.10:80", true, true, "", "10.244.1.5", false, false},
		{"F1 another port of the VIP: nobody", "L2Bridge", clusterIP, hnssim.FromPod, evalPod, "10.96.0.10:81", false, false, "", "", false, false},
		{"F2 ILB: not from outside", "L2Bridge", lbSpec{vip: "10.96.0.10", port: 80, pmFlags: hns.PortFlagILB, backends: []string{"l:10.244.1.5"}},
			hnssim.FromExternal, evalOutside, "10.96.0.10:80", false, false, "", "", false, false},
		{"F2 ILB: from a pod", "L2Bridge", lbSpec{vip: "10.96.0.10", port: 80, pmFlags: hns.PortFlagILB, backends: []string{"l:10.244.1.5"}},
			hnssim.FromPod, evalPod, "10.96.0.10:80", true, true, "", "", false, false},
		{"F3 a VIP from the host", "L2Bridge", clusterIP, hnssim.FromNode, evalHost, "10.96.0.10:80", true, true, "", "", false, false},
		{"F3 a NodePort from the host with LocalRoutedVIP", "L2Bridge", nodePort, hnssim.FromNode, evalHost, "192.168.0.11:30080", true, true, "", "", false, false},
		{"F3 a NodePort from the host without LocalRoutedVIP: the host's own stack", "L2Bridge",
			lbSpec{port: 30080, pmFlags: hns.PortFlagVipExternalIP, backends: []string{"l:10.244.1.5"}},
			hnssim.FromNode, evalHost, "192.168.0.11:30080", true, false, "192.168.0.11", "192.168.0.11", false, true},
		{"F3 an external IP that is the host's, from the host without LocalRoutedVIP", "L2Bridge",
			lbSpec{vip: "192.168.0.11", port: 8443, pmFlags: hns.PortFlagVipExternalIP, backends: []string{"l:10.244.1.5"}},
			hnssim.FromNode, evalHost, "192.168.0.11:8443", true, false, "", "", false, true},
		{"F4 a NodePort from outside", "L2Bridge", nodePort, hnssim.FromExternal, evalOutside, "192.168.0.11:30080", true, true, "192.168.0.11", "10.244.1.5", false, false},
		{"F4 a NodePort from a pod, LocalRoutedVIP or not", "L2Bridge", lbSpec{port: 30080, pmFlags: hns.PortFlagVipExternalIP, backends: []string{"l:10.244.1.5"}},
			hnssim.FromPod, evalPod, "192.168.0.11:30080", true, true, "", "", false, false},
		{"F4 a NodePort on an address the host does not have", "L2Bridge", nodePort, hnssim.FromExternal, evalOutside, "192.168.0.99:30080", false, false, "", "", false, false},
		{"F4 an IPv4 NodePort does not take IPv6 traffic", "L2Bridge", nodePort, hnssim.FromExternal, mustAddr("2001:db8::5"), "[fd00::11]:30080", true, false, "", "", false, true},
		{"F4 the IPv6 flag takes IPv6 traffic", "L2Bridge", lbSpec{port: 30080, flags: hns.LBFlagIPv6, pmFlags: nodePortFlags, backends: []string{"l:fd00:244:1::5"}},
			hnssim.FromExternal, mustAddr("2001:db8::5"), "[fd00::11]:30080", true, true, "", "", false, false},
		{"F5 a VIP from outside", "L2Bridge", clusterIP, hnssim.FromExternal, evalOutside, "10.96.0.10:80", true, true, "10.244.1.254", "", false, false},
		{"S1 DSR: the backend sees the client", "L2Bridge", lbSpec{vip: "203.0.113.10", port: 80, flags: hns.LBFlagDSR, pmFlags: hns.PortFlagVipExternalIP, sourceVIP: "192.168.0.11", backends: []string{"l:10.244.1.5"}},
			hnssim.FromExternal, evalOutside, "203.0.113.10:80", true, true, "198.51.100.5", "10.244.1.5", true, false},
		{"S2 no DSR: the backend sees the SourceVIP", "Overlay", clusterIP, hnssim.FromPod, evalPod, "10.96.0.10:80", true, true, "10.244.1.254", "", false, false},
		{"S2 an empty SourceVIP: the host's address", "L2Bridge", lbSpec{vip: "10.96.0.10", port: 80, backends: []string{"l:10.244.1.5"}},
			hnssim.FromPod, evalPod, "10.96.0.10:80", true, true, "192.168.0.11", "", false, false},
		{"D1 PreserveDIP: the backend sees the VIP", "L2Bridge", lbSpec{vip: "203.0.113.10", port: 80, flags: hns.LBFlagDSR, pmFlags: hns.PortFlagVipExternalIP | hns.PortFlagPreserveDIP | hns.PortFlagUseMux, backends: []string{"l:10.244.1.5"}},
			hnssim.FromExternal, evalOutside, "203.0.113.10:80", true, true, "198.51.100.5", "203.0.113.10", true, false},
		{"P2 overlay: the provider address of the node holding the backend", "Overlay", lbSpec{vip: "10.96.0.10", port: 80, backends: []string{"r:10.244.2.7"}},
			hnssim.FromPod, evalPod, "10.96.0.10:80", true, true, "", "10.244.2.7", false, false},
		{"P2 overlay: another provider address never arrives", "Overlay", lbSpec{vip: "10.96.0.10", port: 80, backends: []string{"r:10.244.2.7@192.168.0.11"}},
			hnssim.FromPod, evalPod, "10.96.0.10:80", false, true, "", "", false, false},
		{"P2 overlay: outside every remote subnet, this node's IP is upstream's", "Overlay", lbSpec{vip: "10.96.0.10", port: 80, backends: []string{"r:203.0.113.99@192.168.0.11"}},
			hnssim.FromPod, evalPod, "10.96.0.10:80", true, true, "", "", false, false},
		{"P2 l2bridge: no provider addresses", "L2Bridge", lbSpec{vip: "10.96.0.10", port: 80, backends: []string{"r:10.244.2.7"}},
			hnssim.FromPod, evalPod, "10.96.0.10:80", true, true, "", "", false, false},
		{"R1 DSR from outside to another node's backend: no reply", "L2Bridge", lbSpec{vip: "203.0.113.10", port: 80, flags: hns.LBFlagDSR, pmFlags: hns.PortFlagVipExternalIP, backends: []string{"r:10.244.2.7"}},
			hnssim.FromExternal, evalOutside, "203.0.113.10:80", false, true, "", "", true, false},
		{"R1 DSR from a pod to another node's backend", "L2Bridge", lbSpec{vip: "10.96.0.10", port: 80, flags: hns.LBFlagDSR, backends: []string{"r:10.244.2.7"}},
			hnssim.FromPod, evalPod, "10.96.0.10:80", true, true, "10.244.1.9", "", true, false},
		{"N1 the host's address, no load balancer", "L2Bridge", lbSpec{}, hnssim.FromExternal, evalOutside, "192.168.0.11:9090", true, false, "198.51.100.5", "192.168.0.11", false, true},
		{"N2 a pod of this host from a pod", "Overlay", lbSpec{}, hnssim.FromPod, evalPod, "10.244.1.7:8080", true, false, "10.244.1.9", "10.244.1.7", false, false},
		{"N2 a pod of this host from outside, l2bridge", "L2Bridge", lbSpec{}, hnssim.FromExternal, evalOutside, "10.244.1.7:8080", true, false, "", "", false, false},
		{"N2 a pod of this host from outside, overlay: isolated", "Overlay", lbSpec{}, hnssim.FromExternal, evalOutside, "10.244.1.7:8080", false, false, "", "", false, false},
		{"N3 another node's pod from a pod", "Overlay", lbSpec{}, hnssim.FromPod, evalPod, "10.244.2.7:8080", true, false, "", "", false, false},
		{"N3 another node's pod from the host, overlay", "Overlay", lbSpec{}, hnssim.FromNode, evalHost, "10.244.2.7:8080", false, false, "", "", false, false},
		{"N3 another node's pod from the host, l2bridge", "L2Bridge", lbSpec{}, hnssim.FromNode, evalHost, "10.244.2.7:8080", true, false, "", "", false, false},
		{"N4 a remote endpoint of an l2bridge network", "L2Bridge", lbSpec{vip: "10.96.0.10", port: 80, backends: []string{"r:10.244.3.7"}},
			hnssim.FromPod, evalPod, "10.244.3.7:8080", true, false, "", "", false, false},
		{"N5 a VIP nobody serves", "L2Bridge", lbSpec{}, hnssim.FromPod, evalPod, "10.96.0.99:80", false, false, "", "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sim := evalWorld(t, tc.network, tc.lb)
			v := sim.Evaluate(hnssim.Packet{From: tc.from, Src: tc.src, Dst: netip.MustParseAddrPort(tc.dst), Protocol: 6, Conn: 1})
			if v.Connected != tc.connected || v.Balanced != tc.balanced || v.ToHost != tc.toHost || (tc.balanced && v.DSR != tc.dsr) ||
				(tc.srcSeen != "" && v.SrcSeen.String() != tc.srcSeen) || (tc.dstSeen != "" && v.DstSeen.String() != tc.dstSeen) {
				t.Fatalf("verdict %+v;\nwant connected=%v balanced=%v toHost=%v dsr=%v srcSeen=%q dstSeen=%q",
					v, tc.connected, tc.balanced, tc.toHost, tc.dsr, tc.srcSeen, tc.dstSeen)
			}
			if v.Balanced && v.Connected && v.Backend.Port() != 8080 {
				t.Fatalf("backend %v: not the internal port", v.Backend)
			}
		})
	}
}
