// Package hnsharness runs the conformance cases over the HNS driver
// against the HNS simulator (hns/hnssim) and its packet evaluator. It is
// not Windows: a pass here means the driver programs what the simulator's
// model of HNS balances as the case expects (see docs/hns.md for what the
// simulator models and where it is unsure).
package hnsharness

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

// Node-2's address: the provider address of remote endpoints on overlay.
const node2 = "192.168.200.2"

// Harness is the HNS driver over a simulated Windows node.
type Harness struct {
	name string
	f    *hns.Factory
	d    dataplanes.Driver
	Sim  *hnssim.Sim
}

// Start builds the world in a simulated HNS of a Windows build and
// network type ("L2Bridge" or "Overlay"), and makes the driver through
// the factory with its command-line flags.
func Start(t testing.TB, name string, build hnssim.Build, networkType string) *Harness {
	t.Helper()
	sim := hnssim.New(build)
	sim.AddNetwork("cbr0", networkType, hns.RemoteSubnet{DestinationPrefix: "10.244.2.0/24", ProviderAddress: node2})
	for _, ip := range conformance.World.NodeIPs {
		sim.AddHostIP(ip)
	}
	for _, m := range conformance.World.Members {
		if m.Kind != conformance.LocalPod && m.Kind != conformance.ClientPod {
			continue
		}
		for _, ip := range m.IPs {
			sim.AddLocalEndpoint("cbr0", fmt.Sprintf("%s-%s", m.Name, ip), ip.String())
		}
	}
	f := &hns.Factory{NewClient: func() (hns.Client, error) { return sim, nil }}
	fs := pflag.NewFlagSet("switchyard", pflag.ContinueOnError)
	f.AddFlags(fs)
	args := []string{"--hns-network-name=cbr0", "--hns-state-file=" + filepath.Join(t.TempDir(), "owned.json")}
	if networkType == "Overlay" {
		args = append(args, "--hns-source-vip=10.244.1.254")
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	d, err := f.New(context.Background(), dataplanes.Env{NodeName: conformance.World.NodeName})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return &Harness{name: name, f: f, d: d, Sim: sim}
}

// Name implements conformance.Harness.
func (h *Harness) Name() string { return h.name }

// Factory implements conformance.Harness.
func (h *Harness) Factory() dataplanes.Factory { return h.f }

// Driver implements conformance.Harness.
func (h *Harness) Driver() dataplanes.Driver { return h.d }

// Wrap replaces the driver under test (a test breaks it on purpose).
func (h *Harness) Wrap(f func(dataplanes.Driver) dataplanes.Driver) { h.d = f(h.d) }

// CanProbe implements conformance.Harness: the simulator has no clock, so
// timeouts cannot be observed, and its evaluator reports no source.
func (h *Harness) CanProbe(p conformance.Probe) string {
	switch {
	case p.Interval > 0:
		return "the HNS simulator has no clock: timeouts cannot be observed"
	case p.NeedsSource:
		return "the HNS simulator's evaluator does not report the source a backend sees"
	}
	return ""
}

// Probe implements conformance.Harness with the simulator's evaluator.
func (h *Harness) Probe(_ context.Context, p conformance.Probe) conformance.Answer {
	pkt := hnssim.Packet{Src: p.Src, Dst: p.Dst, Protocol: protocolNumber(p.Protocol), Conn: uint64(p.Conn)}
	switch p.FromKind {
	case conformance.ExternalClient:
		pkt.From = hnssim.FromExternal
	case conformance.NodeSource:
		pkt.From = hnssim.FromNode
	default:
		pkt.From = hnssim.FromPod
	}
	v := h.Sim.Evaluate(pkt)
	if !v.Balanced {
		return conformance.Answer{Outcome: conformance.NoAnswer, Detail: v.Reason}
	}
	return conformance.AnswerFrom(netip.AddrPortFrom(v.Backend.Addr(), v.Backend.Port()), p.Protocol)
}

func protocolNumber(p graph.Protocol) uint32 {
	switch p {
	case graph.UDP:
		return 17
	case graph.SCTP:
		return 132
	}
	return 6
}
