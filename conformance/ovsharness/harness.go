//go:build linux

package ovsharness

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

const bridge = "br-sy"

// ProbeTimeout is how long a connection waits for an answer before it
// counts as dropped.
const ProbeTimeout = 2 * time.Second

// Harness is the OVS driver on a private OVS with the world around it.
type Harness struct {
	f      *ovs.Factory
	d      dataplanes.Driver
	w      *World
	noSCTP string
}

// World is the conformance world built around a private OVS: its pods,
// the network behind the uplink, and servers on every backend.
type World struct {
	OVS  *ovstest.OVS
	Net  *ovstest.Network
	Pods map[string]*ovstest.Pod // local and client pods by name
	// Timeout is how long a probe waits for an answer (ProbeTimeout
	// unless set).
	Timeout time.Duration
}

// BuildWorld builds the world on a private OVS (stopped with the test).
func BuildWorld(t testing.TB) *World {
	t.Helper()
	checkAddressing(t)
	o := ovstest.Start(t)
	o.AddBridge(bridge)
	w := &World{OVS: o, Net: o.AddNetwork(bridge), Pods: map[string]*ovstest.Pod{}, Timeout: ProbeTimeout}
	for _, m := range conformance.World.Members {
		switch m.Kind {
		case conformance.LocalPod, conformance.ClientPod:
			p := o.AddPod(bridge, m.Name, m.IPs...)
			w.Pods[m.Name] = p
			if m.Kind == conformance.LocalPod {
				serve(t, p.NS, netip.Addr{}, m.Name)
			}
		case conformance.RemotePod:
			for _, ip := range m.IPs {
				o.AddRemoteBackend(w.Net, ip)
				serve(t, w.Net.Node2, ip, m.Name)
			}
		case conformance.ExternalClient:
			for _, ip := range m.IPs {
				if ip != ovstest.ClientIP4 && ip != ovstest.ClientIP6 {
					o.AddClientAddress(w.Net, ip)
				}
			}
		}
	}
	return w
}

// DriverFlags are the --ovs-* flags that point a driver at this world, as
// a user would pass them to switchyard run.
func (w *World) DriverFlags() []string {
	return []string{
		"--ovs-bridge=" + bridge,
		"--ovs-rundir=" + w.OVS.Dir,
		"--ovs-datapath-type=netdev",
		"--ovs-uplink-port=" + w.Net.UplinkIf,
		"--ovs-uplink-next-hop-mac=" + w.Net.RouterMAC.String(),
		"--ovs-gateway-ips=" + ovstest.Gateway4.String() + "," + ovstest.Gateway6.String(),
	}
}

// Probe makes one connection in the world (see Harness.Probe).
func (w *World) Probe(p conformance.Probe) conformance.Answer {
	ns, src := w.Net.Client, p.Src
	if pod, ok := w.Pods[p.From]; ok {
		ns, src = pod.NS, netip.Addr{}
	}
	var id string
	var err error
	switch p.Protocol {
	case "UDP":
		id, err = ovstest.ProbeUDP(ns, src, p.Dst, w.Timeout)
	case "TCP":
		id, err = ovstest.ProbeTCP(ns, src, p.Dst, w.Timeout)
	default:
		return conformance.Answer{Outcome: conformance.Failed, Detail: "no probe for " + string(p.Protocol)}
	}
	switch {
	case err == nil:
		return conformance.Answer{Outcome: conformance.Answered, Identity: id}
	case errors.Is(err, ovstest.ErrRefused):
		return conformance.Answer{Outcome: conformance.Refused, Detail: err.Error()}
	case errors.Is(err, ovstest.ErrTimeout):
		return conformance.Answer{Outcome: conformance.NoAnswer, Detail: fmt.Sprintf("nothing within %v", w.Timeout)}
	}
	return conformance.Answer{Outcome: conformance.Failed, Detail: err.Error()}
}

// Start builds the world and makes the driver through the factory with
// its command-line flags, as `switchyard run --dataplane ovs` would.
func Start(t testing.TB) *Harness {
	t.Helper()
	w := BuildWorld(t)
	h := &Harness{w: w, noSCTP: sctpMissing()}
	h.f = &ovs.Factory{}
	fs := pflag.NewFlagSet("switchyard", pflag.ContinueOnError)
	h.f.AddFlags(fs)
	if err := fs.Parse(w.DriverFlags()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := h.f.New(ctx, dataplanes.Env{NodeName: conformance.World.NodeName})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	h.d = d
	return h
}

// checkAddressing fails when the world and the namespaces ovstest wires
// disagree (the routes behind the uplink are ovstest's).
func checkAddressing(t testing.TB) {
	t.Helper()
	w := conformance.World
	if w.NodeIP(false) != ovstest.NodeIP4 || w.NodeIP(true) != ovstest.NodeIP6 {
		t.Fatalf("world node IPs %v, ovstest wires %s and %s", w.NodeIPs, ovstest.NodeIP4, ovstest.NodeIP6)
	}
	ext, _ := w.Member("external")
	if len(ext.IPs) != 2 || ext.IPs[0] != ovstest.ClientIP4 || ext.IPs[1] != ovstest.ClientIP6 {
		t.Fatalf("world external client %v, ovstest wires %s and %s", ext.IPs, ovstest.ClientIP4, ovstest.ClientIP6)
	}
	local4, local6 := netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fd00:244:1::/64")
	remote4 := netip.MustParsePrefix("10.244.2.0/24")
	for _, m := range w.Members {
		for _, ip := range m.IPs {
			ok := true
			switch m.Kind {
			case conformance.LocalPod, conformance.ClientPod:
				ok = local4.Contains(ip) || local6.Contains(ip)
			case conformance.RemotePod:
				ok = remote4.Contains(ip)
			}
			if !ok {
				t.Fatalf("world member %s has %s, outside what ovstest routes", m.Name, ip)
			}
		}
	}
}

// Name implements conformance.Harness.
func (h *Harness) Name() string { return "ovs" }

// Factory implements conformance.Harness.
func (h *Harness) Factory() dataplanes.Factory { return h.f }

// Driver implements conformance.Harness.
func (h *Harness) Driver() dataplanes.Driver { return h.d }

// CanProbe implements conformance.Harness.
func (h *Harness) CanProbe(p conformance.Probe) string {
	switch {
	case p.FromKind == conformance.NodeSource:
		return "the OVS test world has no host-network client (the node's own traffic would enter through the bridge's LOCAL port, which it does not wire)"
	case p.Protocol == "SCTP" && h.noSCTP != "":
		return h.noSCTP
	}
	return ""
}

// Probe implements conformance.Harness with a real connection.
func (h *Harness) Probe(_ context.Context, p conformance.Probe) conformance.Answer {
	return h.w.Probe(p)
}

// sctpMissing says why SCTP connections cannot be made here ("" if they
// can).
func sctpMissing() string {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, syscall.IPPROTO_SCTP)
	if err != nil {
		return "this kernel has no SCTP sockets (" + err.Error() + "): the driver's SCTP flows are installed but no connection can test them"
	}
	syscall.Close(fd)
	return "SCTP probes are not written yet"
}
