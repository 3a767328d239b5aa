package ovs

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/ovstrace"
	"github.com/switchyard-proxy/switchyard/ovs/vswitchd"
)

// traceFirstPort is the source port of the first traced connection; the
// k-th has traceFirstPort+k.
const traceFirstPort = 40000

// tracer runs ofproto/trace on a control socket of its own, so that a
// trace neither waits for the driver's programming nor holds it up.
type tracer struct {
	mu  sync.Mutex
	ctl *vswitchd.Control
}

// close closes its control socket, once no trace runs.
func (t *tracer) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctl != nil {
		t.ctl.Close()
	}
}

// TraceLive implements dataplanes.LiveTracer: ovs-vswitchd traces the
// first packet of each of n connections like c (source ports 40000, 40001,
// ...) through the bridge as it is programmed now, and says where the
// select groups sent each. UDP is refused: ofproto/trace does not fill
// conntrack's original-direction fields, which UDP frontends match
// (ovs/ovstrace).
func (d *Driver) TraceLive(ctx context.Context, c graph.Connection, n int) (dataplanes.Trace, error) {
	if c.Protocol == graph.UDP {
		return dataplanes.Trace{}, fmt.Errorf("ofproto/trace cannot follow a UDP service connection: it leaves conntrack's original destination unset, which UDP frontends match (docs/ovs.md \"Fragments\")")
	}
	walks, virtual, err := d.traceWalks(ctx, c, n)
	if err != nil {
		return dataplanes.Trace{}, err
	}
	t := dataplanes.Trace{Model: "ofproto/trace through the live bridge " + d.opts.Bridge, Reached: map[string]int{}, Path: walks[0].Steps}
	sources := map[string]bool{}
	for _, w := range walks {
		t.Reached[reachedBy(w)]++
		if w.Endpoint.IsValid() {
			sources[sourceSeen(w, c, virtual)] = true
		}
	}
	for k := range t.Reached {
		if _, err := netip.ParseAddrPort(k); err == nil {
			t.Backends = append(t.Backends, k)
		}
	}
	slices.Sort(t.Backends)
	t.SrcSeen = strings.Join(slices.Sorted(maps.Keys(sources)), ", ")
	return t, nil
}

// traceWalks traces the n connections' first packets (n > 0), the k-th
// from source port traceFirstPort+k, and returns the virtual IPs too (the
// SNAT towards the host).
func (d *Driver) traceWalks(ctx context.Context, c graph.Connection, n int) ([]ovstrace.Walk, []netip.Addr, error) {
	flows, virtual, err := d.traceFlows(c, max(n, 1))
	if err != nil {
		return nil, nil, err
	}
	d.trace.mu.Lock()
	defer d.trace.mu.Unlock()
	if d.trace.ctl == nil {
		d.trace.ctl = vswitchd.NewControl(d.opts.RunDir)
	}
	walks := make([]ovstrace.Walk, len(flows))
	for i, flow := range flows {
		deadline := time.Now().Add(5 * time.Second)
		if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
			deadline = dl
		}
		out, err := d.trace.ctl.Call(deadline, "ofproto/trace", d.opts.Bridge, flow)
		if err != nil {
			d.trace.ctl.Close()
			return nil, nil, fmt.Errorf("ofproto/trace %s: %w", flow, err)
		}
		if walks[i], err = ovstrace.Parse(out); err != nil {
			return nil, nil, err
		}
	}
	return walks, virtual, nil
}

// traceFlows describes the n connections' first packets as they enter
// the bridge, and returns the virtual IPs (the SNAT towards the host).
func (d *Driver) traceFlows(c graph.Connection, n int) ([]string, []netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	flows := make([]string, n)
	for k := range flows {
		f, err := d.model.TraceFlow(c, uint16(traceFirstPort+k))
		if err != nil {
			return nil, nil, err
		}
		flows[k] = f
	}
	return flows, slices.Clone(d.model.Config().VirtualIPs), nil
}

// reachedBy names what became of a traced packet: the endpoint it was
// DNATed to, or its fate.
func reachedBy(w ovstrace.Walk) string {
	switch {
	case w.Endpoint.IsValid():
		return w.Endpoint.String()
	case w.Verdict == ovstrace.Reject:
		return "rejected"
	case w.Verdict == ovstrace.Drop:
		return "dropped"
	}
	return "not load-balanced (forwarded as it is)"
}

// sourceSeen is the source the endpoint sees: the client's, the SNAT's,
// or, SNATed to a virtual IP, the host's own address it masquerades to.
func sourceSeen(w ovstrace.Walk, c graph.Connection, virtual []netip.Addr) string {
	switch {
	case !w.SNAT.IsValid():
		return c.Src.String()
	case slices.Contains(virtual, w.SNAT):
		return "the node's address (SNATed to " + w.SNAT.String() + ", which the host masquerades)"
	}
	return w.SNAT.String()
}
