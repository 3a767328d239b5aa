//go:build linux

package ovsharness

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/core/source/file"
	"github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	v1 "k8s.io/api/core/v1"
)

// ProbeTimeout is how long a connection waits for an answer before it
// counts as dropped.
const ProbeTimeout = 2 * time.Second

// syncTimeout bounds how long the switchyard processes may take to
// program a step.
const syncTimeout = 30 * time.Second

// Harness is the conformance world with a switchyard process per node.
type Harness struct {
	name   string
	f      *ovs.Factory
	w      *World
	noSCTP string
}

var _ conformance.ObjectHarness = (*Harness)(nil)

// ServiceCIDRs hold every ClusterIP of the cases. The overlay world
// routes them whole into the bridge (--ovs-service-cidrs), the routed
// world a route per ClusterIP, so the cases run over both ways into the
// bridge. The marker Service's ClusterIP is outside them: its own host
// route is the sign that a process programmed a step.
const ServiceCIDRs = "10.96.0.0/16,fd00:96::/108"

// Start builds the world in routed or overlay mode.
func Start(t testing.TB, overlay bool) *Harness {
	t.Helper()
	o := WorldOptions{Overlay: overlay}
	if overlay {
		o.Flags = []string{"--ovs-service-cidrs=" + ServiceCIDRs}
	}
	w := BuildWorld(t, o)
	name := "ovs-routed"
	if overlay {
		name = "ovs-overlay"
	}
	return &Harness{name: name, f: &ovs.Factory{}, w: w, noSCTP: sctpMissing()}
}

// Name implements conformance.Harness.
func (h *Harness) Name() string { return h.name }

// Factory implements conformance.Harness (its capabilities decide what is
// unsupported; the processes make their own drivers from their flags).
func (h *Harness) Factory() dataplanes.Factory { return h.f }

// Driver implements conformance.Harness: none in the test, the processes
// have theirs (see Program).
func (h *Harness) Driver() dataplanes.Driver { return nil }

// Program implements conformance.ObjectHarness.
func (h *Harness) Program(ctx context.Context, objs file.Objects) error {
	return h.w.Program(objs)
}

// CanProbe implements conformance.Harness.
func (h *Harness) CanProbe(p conformance.Probe) string {
	if p.Protocol == "SCTP" && h.noSCTP != "" {
		return h.noSCTP
	}
	return ""
}

// Probe implements conformance.Harness with a real connection.
func (h *Harness) Probe(_ context.Context, p conformance.Probe) conformance.Answer {
	return h.w.Probe(p)
}

// World is the conformance world on a cluster of namespaces.
type World struct {
	Cluster      *ovstest.Cluster
	Node1, Node2 *ovstest.Node
	Procs        []*ovstest.Process
	Pods         map[string]*ovstest.Pod
	// File is the cluster file both processes read.
	File string
	// Timeout is how long a probe waits for an answer (ProbeTimeout
	// unless set).
	Timeout time.Duration
	gen     int
	ports   sourcePorts // the probes' source ports
}

// WorldOptions say how to build the world.
type WorldOptions struct {
	// Overlay: VXLAN between the nodes, else routed.
	Overlay bool
	// StartNode1 starts switchyard on node-1 and waits until it has
	// programmed the world's Nodes (nil: a process reading the world's
	// cluster file, as node-2's does).
	StartNode1 func(n *ovstest.Node) *ovstest.Process
	// Flags are more flags for the switchyard processes BuildWorld starts.
	Flags []string
}

// BuildWorld builds the cluster, starts switchyard on both nodes with the
// world's Nodes, attaches the world's pods through switchyard-cni, and
// starts every server. Everything is stopped and removed with the test.
func BuildWorld(t testing.TB, o WorldOptions) *World {
	t.Helper()
	cw := conformance.World
	c := ovstest.NewCluster(t, o.Overlay,
		ovstest.NodeSpec{Name: cw.NodeName, IPs: cw.NodeIPs, PodCIDRs: cw.NodePodCIDRs},
		ovstest.NodeSpec{Name: cw.Peer.Name, IPs: cw.Peer.IPs, PodCIDRs: cw.Peer.PodCIDRs})
	w := &World{Cluster: c, Node1: c.Nodes[0], Node2: c.Nodes[1], Pods: map[string]*ovstest.Pod{},
		File: filepath.Join(c.Dir, "cluster.yaml"), Timeout: ProbeTimeout}
	for _, p := range []string{"203.0.113.0/24", "192.0.2.0/24", "2001:db8:113::/64"} {
		c.RouteToNode(netip.MustParsePrefix(p), w.Node1) // external and load-balancer IPs of the cases
	}
	if err := w.Program(file.Objects{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*ovstest.Node{w.Node1, w.Node2} {
		if n == w.Node1 && o.StartNode1 != nil {
			w.Procs = append(w.Procs, o.StartNode1(n))
			continue
		}
		w.Procs = append(w.Procs, n.StartSwitchyard(t, append([]string{"--file=" + w.File, "--min-sync-period=0"}, o.Flags...)...))
	}
	if err := w.waitSynced(time.Time{}); err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, m := range cw.Members {
		switch m.Kind {
		case conformance.LocalPod, conformance.ClientPod:
			w.Pods[m.Name] = w.Node1.AddPod(t, m.Name, m.IPs...)
		case conformance.RemotePod:
			w.Pods[m.Name] = w.Node2.AddPod(t, m.Name, m.IPs...)
		case conformance.ExternalClient:
			for _, ip := range m.IPs {
				if ip != ovstest.ClientIP4 && ip != ovstest.ClientIP6 {
					c.AddClientAddress(ip)
				}
			}
		}
		if p, ok := w.Pods[m.Name]; ok && !sameAddrs(p.IPs, m.IPs) {
			// A pod has an address of every pod CIDR; the world names
			// those it uses.
			for _, want := range m.IPs {
				if !contains(p.IPs, want) {
					t.Fatalf("switchyard-cni gave %s %v, the world needs %v", m.Name, p.IPs, m.IPs)
				}
			}
		}
		if ns := w.namespaceOf(m); m.Serving() && !served[ns] {
			// One set of servers per namespace: the external client's
			// other addresses answer as "external".
			served[ns] = true
			serve(t, ns, m.Name)
		}
	}
	return w
}

func (w *World) namespaceOf(m conformance.Member) string {
	switch m.Kind {
	case conformance.ExternalClient:
		return w.Cluster.Client
	case conformance.NodeHost:
		return w.Node1.NS
	}
	return w.Pods[m.Name].NS
}

// Program writes the cluster file (the world's Nodes, the objects, and a
// marker Service whose ClusterIP changes every time) and waits until both
// processes have programmed it.
func (w *World) Program(objs file.Objects) error {
	w.gen++
	marker := netip.AddrFrom4([4]byte{10, 99, 255, byte(w.gen%250 + 1)}) // outside ServiceCIDRs
	var all []any
	for _, n := range conformance.World.NodeObjects() {
		all = append(all, n)
	}
	for _, s := range objs.Services {
		all = append(all, s)
	}
	for _, s := range objs.Slices {
		all = append(all, s)
	}
	all = append(all, testobj.Service("switchyard-harness", "marker", testobj.ClusterIPs(marker.String()),
		testobj.Port("p", v1.ProtocolTCP, 1, 0)))
	since := time.Now()
	if err := ovstest.WriteObjects(w.File, all...); err != nil {
		return err
	}
	if w.Procs == nil {
		return nil // not started yet
	}
	return w.waitSynced(since, netip.PrefixFrom(marker, 32))
}

// waitSynced waits until both processes have applied what was written at
// since (their routes to the marker, when given, are the sign).
func (w *World) waitSynced(since time.Time, marker ...netip.Prefix) error {
	for i, p := range w.Procs {
		n := []*ovstest.Node{w.Node1, w.Node2}[i]
		ready := func() bool { return len(marker) == 0 || n.HasRoute(marker[0]) }
		if err := p.WaitSynced(since, ready, syncTimeout); err != nil {
			return err
		}
	}
	return nil
}

// Probe makes one connection in the world (FromKind, when not set, is
// found from From).
func (w *World) Probe(p conformance.Probe) conformance.Answer {
	var ns string
	src := p.Src
	if p.FromKind == "" {
		p.FromKind = conformance.NodeSource
		if m, ok := conformance.World.Member(p.From); ok {
			p.FromKind = m.Kind
		}
	}
	switch p.FromKind {
	case conformance.NodeSource:
		ns, src = w.Node1.NS, netip.Addr{} // the host picks its source
	case conformance.ExternalClient:
		ns = w.Cluster.Client
	default:
		pod, ok := w.Pods[p.From]
		if !ok {
			return conformance.Answer{Outcome: conformance.Failed, Detail: "no pod " + p.From}
		}
		ns, src = pod.NS, netip.Addr{}
	}
	probe := ovstest.ProbeTCPFromPort
	switch p.Protocol {
	case "UDP":
		probe = ovstest.ProbeUDPFromPort
	case "TCP":
	default:
		return conformance.Answer{Outcome: conformance.Failed, Detail: "no probe for " + string(p.Protocol)}
	}
	var id string
	var seen netip.Addr
	var err error
	for range 10 { // a port a server of the namespace holds is skipped
		if id, seen, err = probe(ns, src, w.ports.take(), p.Dst, w.Timeout); !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	switch {
	case err == nil:
		return conformance.Answer{Outcome: conformance.Answered, Identity: id, Source: seen}
	case errors.Is(err, ovstest.ErrRefused):
		return conformance.Answer{Outcome: conformance.Rejected, Detail: err.Error()}
	case errors.Is(err, ovstest.ErrTimeout):
		return conformance.Answer{Outcome: conformance.Dropped, Detail: fmt.Sprintf("nothing within %v: %v", w.Timeout, err)}
	case errors.Is(err, ovstest.ErrUnreachable):
		return conformance.Answer{Outcome: conformance.Unreachable, Detail: err.Error()}
	}
	return conformance.Answer{Outcome: conformance.Failed, Detail: err.Error()}
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

func contains(list []netip.Addr, ip netip.Addr) bool {
	for _, x := range list {
		if x == ip {
			return true
		}
	}
	return false
}

func sameAddrs(a, b []netip.Addr) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range b {
		if !contains(a, x) {
			return false
		}
	}
	return true
}
