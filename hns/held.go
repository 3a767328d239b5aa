package hns

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// A load balancer HNS will not take stays with its Service: the others
// are programmed in the same round (upstream's syncProxyRules logs a
// failed load balancer and goes on to the next service port as well).

// failed handles one key's failure. A load balancer HNS refuses as it
// will again is reported (HNSRefused) and left until it changes or the
// next full sync; one whose call failed is reported once (HNSCallFailed)
// and held back, tried again after a backoff. Both show as degraded.
// What is not a service port's (a load balancer being deleted) or says
// the driver's view of HNS is stale (an object gone) is the node's
// failure: it is returned.
func (d *Driver) failed(key string, err error) error {
	sp := d.serviceOf(key)
	switch {
	case permanent(err):
		d.report(sp, "HNSRefused", err.Error())
		d.refused[key] = dataplanes.Bounded(err.Error(), dataplanes.MaxMessage)
		delete(d.touched, key)
		return nil
	case errors.Is(err, ErrNotFound):
		d.stale = true
	case sp.Name != "":
		d.report(sp, "HNSCallFailed", "will retry: "+err.Error())
		d.held.Hold(key, dataplanes.Bounded(err.Error(), dataplanes.MaxMessage))
		return nil
	}
	return fmt.Errorf("%s: %w", key, err)
}

// degraded is what Sync and Apply return: nil, or the service ports held
// back or refused, one part each.
func (d *Driver) degraded() error {
	parts := map[graph.ServicePortName]dataplanes.DegradedPart{}
	add := func(key, reason, why string) {
		if sp := d.serviceOf(key); sp.Name != "" {
			parts[sp] = dataplanes.DegradedPart{ServicePort: sp, Reason: reason, Message: why}
		}
	}
	for key, why := range d.refused {
		add(key, "HNSRefused", why)
	}
	for _, h := range d.held.Held() {
		add(h.Part, "HNSCallFailed", h.Why)
	}
	if len(parts) == 0 {
		return nil
	}
	dg := &dataplanes.Degraded{Retry: d.held.Next()}
	for _, p := range parts {
		dg.Parts = append(dg.Parts, p)
	}
	slices.SortFunc(dg.Parts, func(a, b dataplanes.DegradedPart) int {
		return strings.Compare(a.ServicePort.String(), b.ServicePort.String())
	})
	return dg
}
