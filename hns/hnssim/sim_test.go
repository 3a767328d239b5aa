package hnssim_test

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

// TestLoadBalancerChecks pins the checks the simulator applies, so a
// driver test that passes cannot be passing because the model is lax.
func TestLoadBalancerChecks(t *testing.T) {
	type fixture struct {
		sim      *hnssim.Sim
		ep       string // a local endpoint's ID
		existing string // a load balancer 10.96.0.1:80/tcp
	}
	lb := func(f fixture, vip string, port uint16, proto uint32, mod func(*hns.LoadBalancer)) *hns.LoadBalancer {
		l := &hns.LoadBalancer{HostComputeEndpoints: []string{f.ep}, SchemaVersion: hns.V2,
			PortMappings: []hns.PortMapping{{Protocol: proto, InternalPort: 8080, ExternalPort: port}}}
		if vip != "" {
			l.FrontendVIPs = []string{vip}
		}
		if mod != nil {
			mod(l)
		}
		return l
	}
	many := func(f fixture, n int) func(*hns.LoadBalancer) {
		return func(l *hns.LoadBalancer) {
			l.HostComputeEndpoints = nil
			for i := range n {
				ep := f.sim.AddLocalEndpoint("cbr0", fmt.Sprint("pod", i), fmt.Sprintf("10.244.9.%d", i+1))
				l.HostComputeEndpoints = append(l.HostComputeEndpoints, ep.ID)
			}
		}
	}
	cases := []struct {
		name    string
		build   hnssim.Build
		lb      func(fixture) *hns.LoadBalancer
		wantErr string // "" for success
	}{
		{"same VIP, port and protocol: 0x803b0013", hnssim.Windows2022,
			func(f fixture) *hns.LoadBalancer { return lb(f, "10.96.0.1", 80, 6, nil) }, "0x803b0013"},
		{"same VIP and port, other protocol", hnssim.Windows2022,
			func(f fixture) *hns.LoadBalancer { return lb(f, "10.96.0.1", 80, 17, nil) }, ""},
		{"same VIP, other port", hnssim.Windows2022,
			func(f fixture) *hns.LoadBalancer { return lb(f, "10.96.0.1", 81, 6, nil) }, ""},
		{"two NodePort balancers (no VIP) on one port: 0x803b0013", hnssim.Windows2022,
			func(f fixture) *hns.LoadBalancer {
				if _, err := f.sim.CreateLoadBalancer(lb(f, "", 30080, 6, nil)); err != nil {
					t.Fatal(err)
				}
				return lb(f, "", 30080, 6, nil)
			}, "0x803b0013"},
		{"64 backends", hnssim.Windows2022,
			func(f fixture) *hns.LoadBalancer { return lb(f, "10.96.0.2", 80, 6, many(f, 64)) }, ""},
		{"65 backends on Windows Server 2019", hnssim.Windows2019,
			func(f fixture) *hns.LoadBalancer { return lb(f, "10.96.0.2", 80, 6, many(f, 65)) }, "more than 64"},
		{"65 backends on Windows Server 2022 (no limit modelled: assumed)", hnssim.Windows2022,
			func(f fixture) *hns.LoadBalancer { return lb(f, "10.96.0.2", 80, 6, many(f, 65)) }, ""},
		{"an endpoint HNS does not have", hnssim.Windows2022,
			func(f fixture) *hns.LoadBalancer {
				return lb(f, "10.96.0.2", 80, 6, func(l *hns.LoadBalancer) { l.HostComputeEndpoints = []string{"nope"} })
			}, "not found"},
		{"protocol ICMP", hnssim.Windows2022,
			func(f fixture) *hns.LoadBalancer { return lb(f, "10.96.0.2", 80, 1, nil) }, "protocol 1"},
		{"IPv6 VIP without the IPv6 flag", hnssim.Windows2022,
			func(f fixture) *hns.LoadBalancer { return lb(f, "fd00::2", 80, 6, nil) }, "IPv6 flag"},
		{"IPv6 on Windows Server 2019", hnssim.Windows2019,
			func(f fixture) *hns.LoadBalancer {
				return lb(f, "fd00::2", 80, 6, func(l *hns.LoadBalancer) { l.Flags = hns.LBFlagIPv6 })
			}, "HNS 11.10"},
		{"SourceIP distribution on Windows Server 2019", hnssim.Windows2019,
			func(f fixture) *hns.LoadBalancer {
				return lb(f, "10.96.0.2", 80, 6, func(l *hns.LoadBalancer) { l.PortMappings[0].DistributionType = hns.DistributionSourceIP })
			}, "HNS 12.0"},
		{"DSR on Windows Server 2019", hnssim.Windows2019,
			func(f fixture) *hns.LoadBalancer {
				return lb(f, "10.96.0.2", 80, 6, func(l *hns.LoadBalancer) { l.Flags = hns.LBFlagDSR })
			}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sim := hnssim.New(tc.build)
			sim.AddNetwork("cbr0", "L2Bridge")
			f := fixture{sim: sim, ep: sim.AddLocalEndpoint("cbr0", "p1", "10.244.1.5").ID}
			ex, err := sim.CreateLoadBalancer(lb(f, "10.96.0.1", 80, 6, nil))
			if err != nil {
				t.Fatal(err)
			}
			f.existing = ex.ID
			candidate := tc.lb(f)
			before := sim.LoadBalancerCount()
			_, err = sim.CreateLoadBalancer(candidate)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			case tc.wantErr != "" && sim.LoadBalancerCount() != before:
				t.Fatal("a refused load balancer was stored")
			}
		})
	}
}

func TestModifyAndEndpointLifetimes(t *testing.T) {
	for _, b := range []hnssim.Build{hnssim.Windows2019, hnssim.Windows2022, hnssim.Windows2025} {
		t.Run(fmt.Sprint(b), func(t *testing.T) {
			sim := hnssim.New(b)
			n := sim.AddNetwork("cbr0", "Overlay", hns.RemoteSubnet{DestinationPrefix: "10.244.2.0/24", ProviderAddress: "192.168.0.12"})
			p1 := sim.AddLocalEndpoint("cbr0", "p1", "10.244.1.5")
			if _, err := sim.CreateEndpoint(n.ID, &hns.Endpoint{IPConfigurations: []hns.IPConfig{{IPAddress: "10.244.2.7"}}, Flags: hns.EndpointFlagRemote}); err == nil {
				t.Fatal("a remote endpoint on overlay without a provider address was accepted")
			}
			rem := hns.RemoteEndpoint(n, mustAddr("10.244.2.7"), mustAddr("192.168.0.12"))
			r, err := sim.CreateEndpoint(n.ID, rem)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sim.CreateEndpoint(n.ID, rem); err == nil {
				t.Fatal("a second endpoint with the same IP was accepted")
			}
			l, err := sim.CreateLoadBalancer(&hns.LoadBalancer{FrontendVIPs: []string{"10.96.0.1"}, HostComputeEndpoints: []string{p1.ID, r.ID},
				PortMappings: []hns.PortMapping{{Protocol: 6, InternalPort: 8080, ExternalPort: 80}}, SchemaVersion: hns.V2})
			if err != nil {
				t.Fatal(err)
			}
			if err := sim.DeleteEndpoint(r.ID); err == nil {
				t.Fatal("an endpoint a load balancer uses was deleted")
			}
			l.HostComputeEndpoints = []string{p1.ID}
			_, err = sim.UpdateLoadBalancer(l.ID, l)
			if modify := b >= hnssim.Windows2025; modify != (err == nil) {
				t.Fatalf("ModifyLoadBalancer on %d: %v", b, err)
			}
			if err != nil && !errors.Is(err, hnssim.ErrNotImplemented) {
				t.Fatalf("ModifyLoadBalancer on %d failed with %v, want not implemented", b, err)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	sim := hnssim.New(hnssim.Windows2022)
	sim.AddNetwork("cbr0", "L2Bridge")
	sim.FailNext("ListLoadBalancers", hnssim.ErrUnavailable, 1)
	if _, err := sim.LoadBalancers(); !errors.Is(err, hnssim.ErrUnavailable) {
		t.Fatalf("injected fault: %v", err)
	}
	if _, err := sim.LoadBalancers(); err != nil {
		t.Fatalf("the fault outlived its count: %v", err)
	}
	sim.Restart(2)
	for i := range 2 {
		if _, err := sim.Network("cbr0"); !errors.Is(err, hnssim.ErrUnavailable) {
			t.Fatalf("call %d during a restart: %v", i, err)
		}
	}
	if _, err := sim.Network("cbr0"); err != nil {
		t.Fatalf("after the restart window: %v", err)
	}
	if c := sim.Calls(); c["ListLoadBalancers"] != 2 || c["Network"] != 3 {
		t.Fatalf("calls %v", c)
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// Features follow the HNS version with hcsshim's lines (hcnglobals.go).
func TestFeaturesFollowTheHNSVersion(t *testing.T) {
	for _, tc := range []struct {
		v                                     hns.Version
		dsr, dualStack, affinity, modify, mod bool
	}{
		{v: hns.Version{Major: 9, Minor: 2}},
		{v: hns.Version{Major: 9, Minor: 3}, dsr: true},
		{v: hns.Version{Major: 10, Minor: 1}},
		{v: hns.Version{Major: 10, Minor: 2}, dsr: true},
		{v: hns.Version{Major: 11, Minor: 10}, dsr: true, dualStack: true},
		{v: hns.Version{Major: 12, Minor: 0}, dsr: true, dualStack: true, affinity: true},
		{v: hns.Version{Major: 15, Minor: 4}, dsr: true, dualStack: true, affinity: true, modify: true},
		{v: hns.Version{Major: 15, Minor: 5}, dsr: true, dualStack: true, affinity: true, modify: true, mod: true},
	} {
		sim := hnssim.New(hnssim.Windows2019)
		sim.SetVersion(tc.v)
		f, err := sim.Features()
		if err != nil {
			t.Fatal(err)
		}
		if f.DSR != tc.dsr || f.IPv6DualStack != tc.dualStack || f.SessionAffinity != tc.affinity || f.ModifyLoadBalancer != tc.modify || f.ModifyApplies() != tc.mod {
			t.Errorf("HNS %d.%d: %+v", tc.v.Major, tc.v.Minor, f)
		}
	}
}
