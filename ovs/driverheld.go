package ovs

import (
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"k8s.io/klog/v2"
)

// What the driver tells about the owners the switch refused (held back
// by bridgeFlows with dataplanes.Holds):
// each newly held one once, as a Problem (a Warning Event on its
// Service), and every held one as a dataplanes.Degraded from Sync and
// Apply, so the runner counts the rest programmed and calls again when
// the first one is due.

// reasonRefused is the Problem and degraded reason of a held owner.
const reasonRefused = "OVSRefused"

// reportHeldLocked says, once each, which owners were held back since
// the last call.
func (d *Driver) reportHeldLocked() {
	for owner, why := range d.flows.holds.TakeFresh() {
		part := d.partOf(owner, why)
		klog.ErrorS(nil, "OVS refused what one part of the node needs: it is held back and retried, the rest is programmed",
			"part", part.Name(), "refusal", part.Message)
		p := dataplanes.Problem{ServicePort: part.ServicePort, Reason: reasonRefused,
			Message: "OVS refused its flows or groups, which are held back and tried again (the rest of the node is programmed): " + part.Message}
		d.problems.Report(p)
	}
}

// degradedLocked is what Sync and Apply return: nil, or the held owners.
func (d *Driver) degradedLocked() error {
	held := d.flows.holds.Held()
	if len(held) == 0 {
		return nil
	}
	dg := &dataplanes.Degraded{Retry: d.flows.holds.Next()}
	for _, h := range held {
		dg.Parts = append(dg.Parts, d.partOf(h.Part, h.Why))
	}
	return dg
}

// partOf names a held owner as a degraded part.
func (d *Driver) partOf(held, why string) dataplanes.DegradedPart {
	owner := engine.OwnerKey(held)
	p := dataplanes.DegradedPart{Reason: reasonRefused, Message: dataplanes.Bounded(why, dataplanes.MaxMessage)}
	if n, ok := d.model.ServicePortOfOwner(owner); ok {
		p.ServicePort = n
		return p
	}
	switch owner {
	case engine.NoOwner:
		p.Part = "flows several service ports share, or an earlier run left"
	case engine.StaticOwner:
		p.Part = "the static pipeline"
	default:
		p.Part = held // pod/PORT, peer/NODE, a service port since removed
	}
	return p
}

// podHeld reports whether a pod's port is held back: switchyard-cni then
// goes on waiting for it.
func (d *Driver) podHeld(port uint32) bool {
	return d.flows != nil && d.flows.holds.IsHeld(string(engine.PodOwner(port)))
}
