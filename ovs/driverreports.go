package ovs

import (
	"fmt"

	"github.com/switchyard-proxy/switchyard/dataplanes"
	"k8s.io/klog/v2"
)

// What the driver says about what it programs other than asked: each is
// logged and reported as a dataplanes.Problem (an Event on the Service).

// reportShadowed says once per flow that it is not installed because
// another flow with the same match is (two Services with one frontend).
func (d *Driver) reportShadowed() {
	for c, w := range d.model.State().Shadowed() {
		if !d.model.State().Has(c) || !d.model.State().Has(w) {
			continue
		}
		n, _ := d.model.ServicePortOf(c)
		if d.problems.Report(dataplanes.Problem{ServicePort: n, Reason: "FrontendConflict",
			Message: fmt.Sprintf("another Service has the same frontend (address, protocol and port): its flow is installed, this one's is not (flow %#x)", c)}) {
			lost, won := d.model.State().FlowOf(c, nil), d.model.State().FlowOf(w, nil)
			klog.InfoS("Two flows have one match and only one can be in OVS: the other service port's frontend is kept",
				"installed", won.Text(), "notInstalled", lost.Text())
		}
	}
}

// reportCollided says, each time one is left out, that a flow is not
// installed because a different flow has its cookie. Nothing else would
// tell: the flow would silently be missing.
func (d *Driver) reportCollided() {
	for c, col := range d.model.State().TakeCollided() {
		klog.ErrorS(nil, "A flow is not installed: a different flow has its cookie (a hash Collision)",
			"cookie", fmt.Sprintf("%#x", c), "owner", col.Owner, "installed", col.Kept.Text(), "notInstalled", col.Lost.Text())
		p := dataplanes.Problem{Reason: "FlowCookieCollision",
			Message: fmt.Sprintf("a flow of %s is not installed: flow %#x, another flow's cookie, is", col.Owner, c)}
		if n, ok := d.model.ServicePortOfOwner(col.Owner); ok {
			p.ServicePort = n
		}
		d.problems.Report(p)
	}
}

// reportClamped says once per service port that its affinity timeout was
// cut to what OVS can hold.
func (d *Driver) reportClamped() {
	for n, requested := range d.model.Clamped() {
		d.problems.Report(dataplanes.Problem{ServicePort: n, Reason: "AffinityTimeoutClamped",
			Message: fmt.Sprintf("sessionAffinityConfig.clientIP.timeoutSeconds %d: OVS holds at most 65535 s, so clients lose affinity after 65535 s idle", requested)})
	}
}
