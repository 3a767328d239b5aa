package ovs

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"k8s.io/klog/v2"
)

// flushUDP removes the conntrack entries, in the driver's DNAT zone, of
// connections DNATed to UDP endpoints that are gone, so their clients are
// balanced anew instead of sending into the void (upstream does the same
// with conntrack -D). Userspace and kernel datapaths both answer
// dpctl/flush-conntrack with a reply-tuple filter (OVS >= 3.1), asked on
// ovs-vswitchd's control socket (the unixctl client, no ovs-appctl).
//
// A flush that fails is tried again at the next change or sync (at the
// latest after --sync-period) unless the endpoint is served again by then;
// the first failure of a round puts the rest off too, so an unreachable
// ovs-vswitchd costs one timeout per round, not one per endpoint.
func (d *Driver) flushUDP(ctx context.Context, eps []graph.Endpoint) {
	err := d.flushes.run(eps, d.model.servesUDP, func(e graph.Endpoint) error {
		ipField := "ct_nw_src"
		if e.IP.Is6() {
			ipField = "ct_ipv6_src"
		}
		reply := fmt.Sprintf("%s=%s,ct_nw_proto=17,ct_tp_src=%d", ipField, e.IP, e.Port)
		deadline := time.Now().Add(5 * time.Second)
		if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
			deadline = dl
		}
		if _, err := d.ctl.call(deadline, "dpctl/flush-conntrack", fmt.Sprintf("zone=%d", d.opts.CtZone), "", reply); err != nil {
			return fmt.Errorf("endpoint %s: %w", e, err)
		}
		klog.V(2).InfoS("Flushed conntrack entries of a removed UDP endpoint", "endpoint", e.String())
		return nil
	})
	if err != nil {
		klog.ErrorS(err, "Flushing conntrack entries of removed UDP endpoints failed; tried again at the next change or sync", "waiting", d.flushes.len())
	}
}

// flushQueue holds the UDP endpoints whose conntrack entries are still to
// be flushed after a failure.
type flushQueue struct {
	pending []graph.Endpoint
}

// maxPendingFlushes bounds the queue (the oldest go first).
const maxPendingFlushes = 4096

func (q *flushQueue) len() int { return len(q.pending) }

// run flushes the pending endpoints and then eps, once each, leaving out
// those served again (served). At the first failure it keeps that endpoint
// and the rest pending, and returns the error.
func (q *flushQueue) run(eps []graph.Endpoint, served func(graph.Endpoint) bool, flush func(graph.Endpoint) error) error {
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

// vswitchdControl finds ovs-vswitchd's control socket in the run directory.
func vswitchdControl(runDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(runDir, "ovs-vswitchd.pid"))
	if err != nil {
		return "", err
	}
	return filepath.Join(runDir, fmt.Sprintf("ovs-vswitchd.%s.ctl", strings.TrimSpace(string(b)))), nil
}

// timeWaitTimeout is how long conntrack keeps a closed TCP connection:
// Linux's conntrack keeps 120 s.
const timeWaitTimeout = 120

// ensureZoneTimeouts gives the driver's conntrack zones, on the userspace
// datapath, Linux conntrack's TIME_WAIT timeout. OVS's own is 30 s, half
// the 60 s a Linux endpoint keeps a closed connection in TIME_WAIT: a
// masqueraded connection reusing a source port between the two met the
// endpoint's TIME_WAIT socket and was refused or left unanswered (seen in
// the tests). The kernel datapath uses Linux's conntrack and needs
// nothing. A failure is logged: traffic works, only such reuse may fail.
func (d *Driver) ensureZoneTimeouts(ctx context.Context) {
	dp, err := d.db.BridgeDatapathType(ctx, d.opts.Bridge)
	if err != nil || dp != "netdev" {
		return
	}
	zones := []int{int(d.opts.CtZone), int(d.opts.CtZone) + 1}
	// The userspace conntrack times both TIME_WAIT and CLOSE with its
	// "closed" timer, which tcp_close sets.
	timeouts := map[string]int{"tcp_time_wait": timeWaitTimeout, "tcp_close": timeWaitTimeout}
	if err := d.db.EnsureZoneTimeouts(ctx, dp, zones, timeouts); err != nil {
		klog.ErrorS(err, "Could not set the conntrack zones' TIME_WAIT timeout; a masqueraded connection reusing a port soon after may fail")
	}
}
