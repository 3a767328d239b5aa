package hnsharness

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"testing"

	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

// HNS-only checks: expectations the shared cases cannot hold, because
// Linux shows them otherwise (a pod's ClusterIP connection masqueraded)
// or because only the simulator observes them (the destination a backend
// sees; an established connection across a change). Each programs the
// driver with cases of testdata/hnsonly.yaml, as the shared cases do, and
// returns what went wrong ("" for nothing).
type hnsOnlyCheck struct {
	name string
	run  func(h *Harness, cases map[string]conformance.Case) string
}

var hnsOnlyChecks = []hnsOnlyCheck{
	{"masqueraded-source-is-the-node", func(h *Harness, cases map[string]conformance.Case) string {
		return failures(h, cases["masqueraded-source-is-the-node"])
	}},
	{"preserve-destination-backend-sees-the-vip", backendSeesTheVIP},
	{"established-connections-keep-their-backend", connectionsKeepTheirBackend},
}

// failures checks a case and says how it failed ("" if it passed).
func failures(h *Harness, c conformance.Case) string {
	r := conformance.Check(context.Background(), h, c)
	if r.Status == conformance.Pass {
		return ""
	}
	return fmt.Sprintf("%s %s: %s %v", c.Name, r.Status, r.Reason, r.Failures)
}

// backendSeesTheVIP: with preserve-destination, the backend sees the
// ingress IP as the destination (hcn's PreserveDIP: "delivers packets with
// destination IP as the VIP").
func backendSeesTheVIP(h *Harness, cases map[string]conformance.Case) string {
	if msg := failures(h, cases["preserve-destination"]); msg != "" {
		return msg
	}
	external, _ := conformance.World.Member("external")
	vip := netip.MustParseAddrPort("203.0.113.62:80")
	v := h.Sim.Evaluate(hnssim.Packet{From: hnssim.FromExternal, Src: external.IPs[0], Dst: vip, Protocol: 6})
	if !v.Connected || v.DstSeen != vip.Addr() {
		return fmt.Sprintf("external -> %s: the backend saw the destination %v, not the ingress IP (%s)", vip, v.DstSeen, v.Reason)
	}
	return ""
}

// connectionsKeepTheirBackend: connections from outside through a NodePort
// keep their backend when another backend goes (VipExternalIP,
// kubernetes#113742).
func connectionsKeepTheirBackend(h *Harness, cases map[string]conformance.Case) string {
	if msg := failures(h, cases["scaling-before"]); msg != "" {
		return msg
	}
	external, _ := conformance.World.Member("external")
	flows := hnssim.NewFlows()
	packet := func(c int) hnssim.Packet {
		return hnssim.Packet{From: hnssim.FromExternal, Src: external.IPs[0], Dst: netip.AddrPortFrom(conformance.World.NodeIP(false), 31003), Protocol: 6, Conn: uint64(c)}
	}
	went := map[int]netip.AddrPort{}
	for c := range 30 {
		if v := flows.Open(h.Sim, packet(c)); v.Connected {
			went[c] = v.Backend
		}
	}
	if msg := failures(h, cases["scaling-after"]); msg != "" {
		return msg
	}
	p3, _ := conformance.World.Member("p3")
	broken := 0
	var example string
	for c, was := range went {
		if was.Addr() == p3.IPs[0] {
			continue // its backend is gone
		}
		if v := flows.Next(h.Sim, packet(c)); !v.Connected || v.Backend != was {
			broken++
			example = v.Reason
		}
	}
	if broken > 0 {
		return fmt.Sprintf("%d of %d connections to a backend that stayed broke when p3 went (%s)", broken, len(went), example)
	}
	return ""
}

// loadHNSOnlyCases reads testdata/hnsonly.yaml.
func loadHNSOnlyCases(t *testing.T) map[string]conformance.Case {
	t.Helper()
	list, err := conformance.LoadCases(os.DirFS("testdata"), "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]conformance.Case{}
	for _, c := range list {
		out[c.Name] = c
	}
	return out
}

// TestHNSOnlyChecks runs the HNS-only checks on the unmutated driver in
// every HNS column: they must hold.
func TestHNSOnlyChecks(t *testing.T) {
	cases := loadHNSOnlyCases(t)
	for _, col := range columns {
		for _, check := range hnsOnlyChecks {
			t.Run(col.name+"/"+check.name, func(t *testing.T) {
				if msg := check.run(Start(t, col.name, col.build, col.network), cases); msg != "" {
					t.Error(msg)
				}
			})
		}
	}
}
