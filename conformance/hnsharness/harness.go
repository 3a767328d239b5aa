// Package hnsharness runs the conformance cases over the HNS driver
// against the HNS simulator (hns/hnssim) and its packet evaluator. It is
// not Windows: a pass here means the driver programs what the simulator's
// model of HNS balances as the case expects (see docs/hns.md for what the
// simulator models, each rule with its source, and where it is unsure).
//
// Answers carry what the evaluator says the backend saw: its source (and
// the node's source address, below), the destination and DSR (in the
// answer's detail). A case's expected source names are read with Windows
// semantics:
//
//   - a member's name (c, external, p1) is that member's address: what a
//     backend sees when HNS does not SNAT, that is with DSR (Windows
//     networking: "service traffic arrives with the source IP set as the
//     originating pod IP"; ETP=Local is DSR) and for traffic no load
//     balancer takes;
//   - "node" is the address the node SNATs a balanced connection to: its
//     load balancer's SourceVIP. On l2bridge that is the node IP (upstream
//     winkernel: "For L2Bridge network the Source VIP is always the
//     NodeIP"); on overlay it is --hns-source-vip (10.244.1.254 here) when
//     the backend is a pod, and the node IP when it is not (winkernel's
//     rule for endpoints that are node or public IPs). The harness puts
//     that address in each answer (Answer.NodeSource), so the judge holds
//     the driver to the address upstream would use, not to whatever
//     SourceVIP the driver chose. On OVS, "node" is the node's address, as
//     the OVS harness reports what its backends saw: in both, "node" is
//     the address the node's dataplane masquerades to.
//
// Where Linux and Windows differ for a documented reason, the driver's
// factory declares the gap; the harness does not bend an expectation. One
// such difference: without DSR, HNS SNATs a pod's balanced connections
// too, so a backend behind a ClusterIP sees "node" where Linux shows the
// pod (no shared case expects the pod there).
//
// Traffic routed to the node's own address on a port no host server of
// the world listens on gets no answer: Windows Firewall's default inbound
// rule blocks it (assumed: not verified that it sends no reset).
package hnsharness

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"testing"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

// SourceVIP is --hns-source-vip on overlay networks: an address of this
// node's pod prefix, as upstream requires.
var SourceVIP = netip.MustParseAddr("10.244.1.254")

// Harness is the HNS driver over a simulated Windows node.
type Harness struct {
	name    string
	overlay bool
	f       *hns.Factory
	d       dataplanes.Driver
	Sim     *hnssim.Sim
}

// Option changes how Start builds a harness.
type Option func(*options)

type options struct {
	wrapClient func(hns.Client) hns.Client
}

// WrapClient makes the driver talk to HNS through wrap: a test changes
// what the driver asks of HNS (mutation_test.go) without touching the
// driver.
func WrapClient(wrap func(hns.Client) hns.Client) Option {
	return func(o *options) { o.wrapClient = wrap }
}

// Start builds the world in a simulated HNS of a Windows build and
// network type ("L2Bridge" or "Overlay"), and makes the driver through
// the factory with its command-line flags. The network routes node-2's
// pod prefix to node-2's address.
func Start(t testing.TB, name string, build hnssim.Build, networkType string, opts ...Option) *Harness {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	sim := hnssim.New(build)
	peer := conformance.World.Peer
	var remote []hns.RemoteSubnet
	for _, p := range peer.PodCIDRs {
		for _, ip := range peer.IPs {
			if ip.Is4() == p.Addr().Is4() {
				remote = append(remote, hns.RemoteSubnet{DestinationPrefix: p.String(), ProviderAddress: ip.String()})
			}
		}
	}
	n := sim.AddNetwork("cbr0", networkType, remote...)
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
	var client hns.Client = sim
	if o.wrapClient != nil {
		client = o.wrapClient(sim)
	}
	f := &hns.Factory{NewClient: func() (hns.Client, error) { return client, nil }}
	fs := pflag.NewFlagSet("switchyard", pflag.ContinueOnError)
	f.AddFlags(fs)
	args := []string{"--hns-network-name=cbr0", "--hns-state-file=" + filepath.Join(t.TempDir(), "owned.json")}
	if n.IsOverlay() {
		args = append(args, "--hns-source-vip="+SourceVIP.String())
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	d, err := f.New(context.Background(), dataplanes.Env{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return &Harness{name: name, overlay: n.IsOverlay(), f: f, d: d, Sim: sim}
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
// timeouts cannot be observed.
func (h *Harness) CanProbe(p conformance.Probe) string {
	if p.Interval > 0 {
		return "the HNS simulator has no clock: timeouts cannot be observed"
	}
	return ""
}

// Probe implements conformance.Harness with the simulator's evaluator.
func (h *Harness) Probe(_ context.Context, p conformance.Probe) conformance.Answer {
	return h.answer(p, h.Sim.Evaluate(packetOf(p)))
}

// packetOf is the evaluator's packet for a probe's connection.
func packetOf(p conformance.Probe) hnssim.Packet {
	pkt := hnssim.Packet{Src: p.Src, Dst: p.Dst, Protocol: protocolNumber(p.Protocol), Conn: uint64(p.Conn)}
	switch p.FromKind {
	case conformance.ExternalClient:
		pkt.From = hnssim.FromExternal
	case conformance.NodeSource:
		pkt.From = hnssim.FromNode
	default:
		pkt.From = hnssim.FromPod
	}
	return pkt
}

// answer is what the probe's client gets, by the evaluator's verdict: the
// world's backend at the verdict's backend answers, having seen the
// verdict's source.
func (h *Harness) answer(p conformance.Probe, v hnssim.Verdict) conformance.Answer {
	if !v.Connected {
		return conformance.Answer{Outcome: conformance.Dropped, Detail: v.Reason}
	}
	if v.ToHost && !conformance.World.Serves(string(p.Protocol), v.Backend.Port()) {
		return conformance.Answer{Outcome: conformance.Dropped,
			Detail: v.Reason + ": no host server on this port, and Windows Firewall's default inbound rule drops it (assumed)"}
	}
	a := conformance.AnswerFrom(v.Backend, p.Protocol)
	if a.Outcome != conformance.Answered {
		return a
	}
	a.Source = v.SrcSeen
	a.NodeSource = h.nodeSource(v.Backend.Addr())
	a.Detail = fmt.Sprintf("%s; the backend saw %s -> %s; DSR %v", v.Reason, v.SrcSeen, v.DstSeen, v.DSR)
	return a
}

// nodeSource is what "node" means as a source for a connection to
// backend: the SourceVIP upstream gives its load balancer (see the
// package comment).
func (h *Harness) nodeSource(backend netip.Addr) netip.Addr {
	if h.overlay && SourceVIP.Is4() == backend.Is4() && isPod(backend) {
		return SourceVIP
	}
	return conformance.World.NodeIP(backend.Is6())
}

// isPod reports whether ip is in a pod prefix of the world's nodes.
func isPod(ip netip.Addr) bool {
	for _, p := range slices.Concat(conformance.World.NodePodCIDRs, conformance.World.Peer.PodCIDRs) {
		if p.Contains(ip) {
			return true
		}
	}
	return false
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
