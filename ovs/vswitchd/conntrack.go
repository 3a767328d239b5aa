package vswitchd

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// FlushUDP removes the conntrack entries, in zone, of connections DNATed
// to the UDP endpoint e (their reply comes from it), so their clients are
// balanced anew instead of sending into the void (upstream does the same
// with conntrack -D). Userspace and kernel datapaths both answer
// dpctl/flush-conntrack with a reply-tuple filter (OVS >= 3.1).
func FlushUDP(ctl *Control, deadline time.Time, zone uint16, e graph.Endpoint) error {
	ipField := "ct_nw_src"
	if e.IP.Is6() {
		ipField = "ct_ipv6_src"
	}
	reply := fmt.Sprintf("%s=%s,ct_nw_proto=17,ct_tp_src=%d", ipField, e.IP, e.Port)
	if _, err := ctl.Call(deadline, "dpctl/flush-conntrack", fmt.Sprintf("zone=%d", zone), "", reply); err != nil {
		return fmt.Errorf("endpoint %s: %w", e, err)
	}
	return nil
}

// FlushQueue holds the UDP endpoints whose conntrack entries are still to
// be flushed after a failure. The zero value is empty.
type FlushQueue struct {
	pending []graph.Endpoint
}

// maxPendingFlushes bounds the queue (the oldest go first).
const maxPendingFlushes = 4096

// Len is the number of endpoints waiting.
func (q *FlushQueue) Len() int { return len(q.pending) }

// Run flushes the pending endpoints and then eps, once each, leaving out
// those served again (served: a flush would cut their new connections).
// At the first failure it keeps that endpoint and the rest pending, and
// returns the error: an unreachable ovs-vswitchd costs one timeout per
// round, not one per endpoint.
func (q *FlushQueue) Run(eps []graph.Endpoint, served func(graph.Endpoint) bool, flush func(graph.Endpoint) error) error {
	if len(eps) == 0 && len(q.pending) == 0 {
		return nil
	}
	seen := map[netip.AddrPort]bool{}
	var todo []graph.Endpoint
	add := func(e graph.Endpoint) {
		if !seen[e.AddrPort()] {
			seen[e.AddrPort()] = true
			todo = append(todo, e)
		}
	}
	for _, e := range q.pending {
		if !served(e) {
			add(e)
		}
	}
	for _, e := range eps {
		add(e)
	}
	q.pending = nil
	for i, e := range todo {
		if err := flush(e); err != nil {
			rest := todo[i:]
			if len(rest) > maxPendingFlushes {
				rest = rest[len(rest)-maxPendingFlushes:]
			}
			q.pending = append([]graph.Endpoint(nil), rest...)
			return err
		}
	}
	return nil
}
