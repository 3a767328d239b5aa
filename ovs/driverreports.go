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
	for c, w := range d.model.st.Shadowed() {
		if d.model.st.flows[c] == nil || d.model.st.flows[w] == nil {
			continue
		}
		n, _ := d.model.servicePortOf(c)
		if d.problems.Report(dataplanes.Problem{ServicePort: n, Reason: "FrontendConflict",
			Message: fmt.Sprintf("another Service has the same frontend (address, protocol and port): its flow is installed, this one's is not (flow %#x)", c)}) {
			lost, won := d.model.st.flowOf(c, nil), d.model.st.flowOf(w, nil)
			klog.InfoS("Two flows have one match and only one can be in OVS: the other service port's frontend is kept",
				"installed", won.Text(), "notInstalled", lost.Text())
		}
	}
}

// reportCollided says, each time one is left out, that a flow is not
// installed because a different flow has its cookie. Nothing else would
// tell: the flow would silently be missing.
func (d *Driver) reportCollided() {
	for c, col := range d.model.st.takeCollided() {
		klog.ErrorS(nil, "A flow is not installed: a different flow has its cookie (a hash collision)",
			"cookie", fmt.Sprintf("%#x", c), "owner", col.owner, "installed", col.kept.Text(), "notInstalled", col.lost.Text())
		p := dataplanes.Problem{Reason: "FlowCookieCollision",
			Message: fmt.Sprintf("a flow of %s is not installed: flow %#x, another flow's cookie, is", col.owner, c)}
		if n, ok := d.model.servicePortOfOwner(col.owner); ok {
			p.ServicePort = n
		}
		d.problems.Report(p)
	}
}

// reportClamped says once per service port that its affinity timeout was
// cut to what OVS can hold.
func (d *Driver) reportClamped() {
	for n := range d.model.clamped {
		requested := d.model.sps[n].SessionAffinity.TimeoutSeconds
		d.problems.Report(dataplanes.Problem{ServicePort: n, Reason: "AffinityTimeoutClamped",
			Message: fmt.Sprintf("sessionAffinityConfig.clientIP.timeoutSeconds %d: OVS holds at most 65535 s, so clients lose affinity after 65535 s idle", requested)})
	}
}
