// Package hnstrace answers, without Windows, what HNS would do with a new
// connection on a node's graph: the HNS driver programs the graph into the
// HNS simulator (hnssim: every rule it models names its source or says
// "assumed"), and the connection's first packet is evaluated there. It is
// the simulator's verdict on what the driver renders, not Windows'.
// Imported, it registers itself as the hns driver's dataplanes.Tracer
// (cmd/switchyard/builtin imports it).
package hnstrace

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

// Result is what the simulated HNS does with a connection's first packet,
// for Connections connections from the same client (another source port
// each): where each went.
type Result struct {
	Build   hnssim.Build
	Network string // "L2Bridge"
	// Verdicts counts the verdicts by what happened: a backend (ip:port),
	// "routed to DST" when no load balancer took the packet, or why it
	// went nowhere.
	Verdicts    map[string]int
	Connections int
	// SrcSeen is the source the backends see (the client's, or HNS's
	// SNAT), DSR whether they answer the client directly.
	SrcSeen string
	DSR     bool
}

// Backends lists, sorted, the backends the connections reached.
func (r Result) Backends() []string {
	var out []string
	for k := range r.Verdicts {
		if _, err := netip.ParseAddrPort(k); err == nil {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Trace programs s with the HNS driver into a simulated Windows Server of
// build b on an l2bridge network, and evaluates conns connections like c.
// The network holds an endpoint for every local endpoint of s, as the
// node's CNI would have made them; peers' pod CIDRs are its remote
// subnets.
func Trace(ctx context.Context, s graph.Snapshot, b hnssim.Build, c graph.Connection, conns int, stateDir string) (Result, error) {
	sim := SimulatedNode(s, b)
	d, err := Program(ctx, sim, s, stateDir)
	if err != nil {
		return Result{}, err
	}
	defer d.Close()
	r := Result{Build: b, Network: "L2Bridge"}
	evaluate(sim, s.Node.IPs, c, conns, &r)
	return r, nil
}

// Program runs the HNS driver over sim (a SimulatedNode) on the network
// cbr0, its ownership file in stateDir, and has it program s. A degraded
// sync (some Services refused) is not an error: what was programmed
// stands. The caller closes the driver.
func Program(ctx context.Context, sim *hnssim.Sim, s graph.Snapshot, stateDir string) (*hns.Driver, error) {
	d, err := hns.NewDriver(sim, hns.Options{NetworkName: network, StateFile: filepath.Join(stateDir, "hns-owned.json")}, dataplanes.Env{})
	if err != nil {
		return nil, err
	}
	var degraded *dataplanes.Degraded
	if err := d.Sync(ctx, s); err != nil && !errors.As(err, &degraded) {
		d.Close()
		return nil, fmt.Errorf("programming the simulated HNS: %w", err)
	}
	return d, nil
}

// evaluate sends conns connections like c through sim, into r.
func evaluate(sim *hnssim.Sim, nodeIPs []netip.Addr, c graph.Connection, conns int, r *Result) {
	r.Verdicts, r.Connections = map[string]int{}, conns
	from := hnssim.FromExternal
	switch {
	case slices.Contains(nodeIPs, c.Src):
		from = hnssim.FromNode
	case c.FromThisNode:
		from = hnssim.FromPod
	}
	proto := map[graph.Protocol]uint32{graph.TCP: 6, graph.UDP: 17, graph.SCTP: 132}[c.Protocol]
	for i := range conns {
		v := sim.Evaluate(hnssim.Packet{From: from, Src: c.Src, Dst: netip.AddrPortFrom(c.Dst, c.Port), Protocol: proto, Conn: uint64(i)})
		r.Verdicts[verdictKey(v)]++
		if v.Connected {
			r.SrcSeen, r.DSR = v.SrcSeen.String(), v.DSR
		}
	}
}

const network = "cbr0"

func init() { dataplanes.RegisterTracer("hns", tracer{}) }

// tracer is the hns driver's dataplanes.Tracer: Trace on Windows Server
// 2025 in a fresh directory.
type tracer struct{}

func (tracer) Trace(ctx context.Context, s graph.Snapshot, c graph.Connection, conns int) (dataplanes.Trace, error) {
	dir, err := os.MkdirTemp("", "switchyard-hnstrace-")
	if err != nil {
		return dataplanes.Trace{}, err
	}
	defer os.RemoveAll(dir)
	r, err := Trace(ctx, s, hnssim.Windows2025, c, conns, dir)
	if err != nil {
		return dataplanes.Trace{}, err
	}
	t := dataplanes.Trace{Reached: r.Verdicts, Backends: r.Backends(), SrcSeen: r.SrcSeen, DSR: r.DSR,
		Model: fmt.Sprintf("the HNS simulator (hnssim), Windows Server build %d, an l2bridge network: its rules name their sources or say assumed", r.Build)}
	for _, route := range s.Routes(c) {
		if route.Action == graph.RejectNoEndpoint {
			t.Note = "HNS cannot reject (a gap the driver declares): the client is not refused, its packets go nowhere"
		}
	}
	return t, nil
}

// SimulatedNode is an HNS with the node's addresses, its pods' endpoints
// (as the node's CNI would have made them, on an l2bridge network named
// cbr0) and its peers' pod CIDRs.
func SimulatedNode(s graph.Snapshot, b hnssim.Build) *hnssim.Sim {
	sim := hnssim.New(b)
	var remote []hns.RemoteSubnet
	for _, p := range s.Peers {
		for _, cidr := range p.PodCIDRs {
			if ip, ok := graph.FirstOfFamily(p.IPs, graph.FamilyOf(cidr.Addr())); ok {
				remote = append(remote, hns.RemoteSubnet{DestinationPrefix: cidr.String(), ProviderAddress: ip.String()})
			}
		}
	}
	sim.AddNetwork(network, "L2Bridge", remote...)
	for _, ip := range s.Node.IPs {
		sim.AddHostIP(ip)
	}
	made := map[netip.Addr]bool{}
	for _, sp := range s.ServicePorts {
		for _, l := range sp.EndpointLists() {
			for e := range l.All() {
				if e.Local && !made[e.IP] {
					made[e.IP] = true
					sim.AddLocalEndpoint(network, "pod-"+e.IP.String(), e.IP.String())
				}
			}
		}
	}
	return sim
}

func verdictKey(v hnssim.Verdict) string {
	switch {
	case v.Balanced && v.Connected:
		return v.Backend.String()
	case !v.Balanced && v.Connected:
		return "routed to " + v.Backend.String()
	}
	return "nowhere: " + v.Reason
}
