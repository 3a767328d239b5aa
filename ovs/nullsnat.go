package ovs

import (
	"context"
	"strconv"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/klog/v2"
)

// The values of --ovs-conntrack-null-snat.
const (
	NullSNATAuto = "auto"
	NullSNATOn   = "on"
	NullSNATOff  = "off"
)

// userspaceNullSNATFrom is the first Open vSwitch release whose userspace
// conntrack keeps a null-NAT connection's two directions as one entry
// (commit 1116459b3, "conntrack: Remove nat_conn introducing key
// directionality", first in v3.3.0).
var userspaceNullSNATFrom = version.MajorMinor(3, 3)

// nullSNATDecision says whether to commit the connections that are no
// service's with a null SNAT (pipeline.Config.CommitNullSNAT), and why.
//
// "auto" turns it on where the datapath's conntrack does it right. Linux's
// (the kernel datapath) gives a null binding a new source port only on a
// clash, as it does for kube-proxy's connections. OVS's userspace
// conntrack before 3.3 keeps a NATed connection's reply direction as a
// second entry that never expires by itself (lib/conntrack.c in 3.1.0:
// conn_expired is false for CT_CONN_TYPE_UN_NAT); for a null NAT it has
// the original direction's hash (conn_key_hash is symmetric), so once the
// connection ends, a new one on the same 4-tuple finds it and is left
// unanswered until the sweeper (every 20 s) removes both: kubelet's probes
// met it. There the clash stays unresolved (docs/ovs.md).
func nullSNATDecision(mode, datapathType, ovsVersion string) (on bool, why string) {
	switch {
	case mode == NullSNATOn:
		return true, "--ovs-conntrack-null-snat=on"
	case mode == NullSNATOff:
		return false, "--ovs-conntrack-null-snat=off"
	case datapathType != "netdev":
		return true, "the kernel datapath's conntrack (Linux's) resolves source-port clashes with it"
	}
	v, err := version.ParseGeneric(ovsVersion)
	switch {
	case err != nil:
		return false, "userspace datapath of an unknown OVS version (" + strconv.Quote(ovsVersion) + "): assumed older than 3.3, whose conntrack blocks a 4-tuple's reuse after a null SNAT"
	case v.AtLeast(userspaceNullSNATFrom):
		return true, "userspace datapath of OVS " + ovsVersion + " (3.3 or later) resolves source-port clashes with it"
	default:
		return false, "userspace datapath of OVS " + ovsVersion + " (before 3.3): its conntrack blocks a 4-tuple's reuse after a null SNAT, so a source-port clash with a recent Service connection stays unresolved"
	}
}

// decideNullSNAT sets the model's CommitNullSNAT once connected (the
// switch says its version), before the first sync, and logs why. It is
// decided once: an OVS upgraded under a running switchyard is seen at its
// next start. dp is the bridge's datapath type (bridgeDatapathType).
func (d *Driver) decideNullSNAT(ctx context.Context, dp string) {
	var ovsVersion string
	if d.opts.NullSNAT == NullSNATAuto && dp == "netdev" {
		var err error
		if ovsVersion, err = d.conn.SoftwareVersion(ctx); err != nil {
			klog.ErrorS(err, "Could not ask OVS its version")
		}
	}
	on, why := nullSNATDecision(d.opts.NullSNAT, dp, ovsVersion)
	d.mu.Lock()
	d.model.SetCommitNullSNAT(on)
	d.mu.Unlock()
	klog.InfoS("Connections that are no Service's are committed", "nullSNAT", on, "why", why)
}
