package ovs

import (
	"context"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/ovs/vswitchd"
	"k8s.io/klog/v2"
)

// flushUDP removes the conntrack entries, in the driver's DNAT zone, of
// connections DNATed to UDP endpoints that are gone (vswitchd.FlushUDP),
// over ovs-vswitchd's control socket.
//
// A flush that fails is tried again at the next change or sync (at the
// latest after --sync-period) unless the endpoint is served again by then;
// the first failure of a round puts the rest off too, so an unreachable
// ovs-vswitchd costs one timeout per round, not one per endpoint.
func (d *Driver) flushUDP(ctx context.Context, eps []graph.Endpoint) {
	err := d.flushes.Run(eps, d.model.ServesUDP, func(e graph.Endpoint) error {
		deadline := time.Now().Add(5 * time.Second)
		if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
			deadline = dl
		}
		if err := vswitchd.FlushUDP(d.ctl, deadline, d.opts.CtZone, e); err != nil {
			return err
		}
		klog.V(2).InfoS("Flushed conntrack entries of a removed UDP endpoint", "endpoint", e.String())
		return nil
	})
	if err != nil {
		klog.ErrorS(err, "Flushing conntrack entries of removed UDP endpoints failed; tried again at the next change or sync", "waiting", d.flushes.Len())
	}
}

// bridgeDatapathType is the bridge's datapath type as OVSDB has it, or
// --ovs-datapath-type's when it cannot be read (logged): a bridge this
// driver made has that type.
func (d *Driver) bridgeDatapathType(ctx context.Context) string {
	dp, err := d.db.BridgeDatapathType(ctx, d.opts.Bridge)
	if err != nil {
		klog.ErrorS(err, "Could not read the bridge's datapath type; taking --ovs-datapath-type's", "bridge", d.opts.Bridge, "datapathType", d.opts.DatapathType)
		return d.opts.DatapathType
	}
	return dp
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
// dp is the bridge's datapath type (bridgeDatapathType).
func (d *Driver) ensureZoneTimeouts(ctx context.Context, dp string) {
	if dp != "netdev" {
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
