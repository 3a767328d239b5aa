package hns

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"k8s.io/klog/v2"
)

// maxStaleDeletes bounds how many load balancers left over from earlier
// runs one full sync deletes (upstream: 20), so a start-up after many
// changes does not stall; the rest go in later syncs.
const maxStaleDeletes = 20

// reconcile brings every touched key to its desired state with the
// fewest HNS calls. Transient failures are returned (the batch is retried
// with everything still pending); failures HNS will repeat (a frontend
// another component holds) are reported and left for the next full sync.
func (d *Driver) reconcile(full bool) error {
	if d.stale && !full { // a full sync has just refreshed
		if err := d.refresh(); err != nil {
			return err
		}
		for k := range d.desired {
			d.touched[k] = true // what vanished is recreated now
		}
	}
	d.stale = false
	var transient []error
	keys := make([]string, 0, len(d.touched))
	for k := range d.touched {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	refreshed, deleted := false, 0
	var unused []string // remote endpoint IDs whose last user may be gone
	if full {
		for _, id := range d.remote {
			unused = append(unused, id) // leftovers of an earlier run too
		}
	}

	fail := func(key string, err error) {
		if permanent(err) {
			d.report(d.serviceOf(key), "HNSRefused", err.Error())
			delete(d.touched, key)
			return
		}
		if errors.Is(err, ErrNotFound) {
			d.stale = true
		} else if sp := d.serviceOf(key); sp.Name != "" {
			// Retried with backoff; said once per service port and error.
			d.report(sp, "HNSCallFailed", "will retry: "+err.Error())
		}
		transient = append(transient, fmt.Errorf("%s: %w", key, err))
	}

	for _, key := range keys {
		want, isDesired := d.desired[key]
		have, isInstalled := d.inst[key]
		var spec LoadBalancer
		if isDesired {
			var err error
			spec, err = d.spec(want, &refreshed)
			if err != nil {
				fail(key, err)
				continue
			}
			if len(spec.HostComputeEndpoints) == 0 {
				isDesired = false // no endpoint HNS knows of: no load balancer
			}
		}
		switch {
		case !isDesired && !isInstalled:
		case !isDesired:
			if full && deleted >= maxStaleDeletes {
				continue // left for a later sync
			}
			deleted++
			if err := d.c.DeleteLoadBalancer(have.ID); err != nil && !errors.Is(err, ErrNotFound) {
				fail(key, err)
				continue
			}
			unused = append(unused, have.Spec.HostComputeEndpoints...)
			d.forget(key, have.ID)
		case isInstalled && equalSpec(have.Spec, spec):
		case isInstalled && d.features.ModifyLoadBalancer && onlyEndpointsDiffer(have.Spec, spec):
			lb, err := d.c.UpdateLoadBalancer(have.ID, &spec)
			if isNotImplemented(err) {
				klog.InfoS("HNS does not implement ModifyLoadBalancer; replacing load balancers instead")
				d.features.ModifyLoadBalancer = false
				if err := d.recreate(key, have, spec); err != nil {
					fail(key, err)
					continue
				}
			} else if err != nil {
				fail(key, err)
				continue
			} else if applied, err := d.modifyApplied(lb.ID, spec); err != nil {
				fail(key, err)
				continue
			} else if !applied {
				d.modifyFailed(key)
				if err := d.recreate(key, have, spec); err != nil {
					fail(key, err)
					continue
				}
			} else {
				d.setInstalled(key, installed{ID: lb.ID, Spec: normalize(*lb)})
			}
			unused = append(unused, have.Spec.HostComputeEndpoints...)
		case isInstalled:
			if err := d.recreate(key, have, spec); err != nil {
				fail(key, err)
				continue
			}
			unused = append(unused, have.Spec.HostComputeEndpoints...)
		default:
			lb, err := d.c.CreateLoadBalancer(&spec)
			if err != nil {
				fail(key, err)
				continue
			}
			d.setInstalled(key, installed{ID: lb.ID, Spec: normalize(*lb)})
			d.owned.add(lb.ID, key)
		}
		delete(d.touched, key)
	}
	if err := d.collectRemote(unused); err != nil {
		transient = append(transient, err)
	}
	if err := d.owned.saveIfChanged(d.opts.StateFile); err != nil {
		transient = append(transient, fmt.Errorf("saving %s: %w", d.opts.StateFile, err))
	}
	return errors.Join(transient...)
}

// modifyApplied reads a modified load balancer back: HNS 15.4 answered a
// ModifyLoadBalancer with success and kept the old endpoints
// (kubernetes#131466). The version gate keeps the driver off such an HNS;
// this read-back catches one the gate lets through.
func (d *Driver) modifyApplied(id string, spec LoadBalancer) (bool, error) {
	got, err := d.c.LoadBalancer(id)
	if err != nil {
		return false, err
	}
	return slices.Equal(normalize(*got).HostComputeEndpoints, normalize(spec).HostComputeEndpoints), nil
}

// modifyFailed stops in-place modifies for good and says why, on the
// service port whose load balancer showed it.
func (d *Driver) modifyFailed(key string) {
	d.features.ModifyLoadBalancer = false
	d.report(d.serviceOf(key), "ModifyNotApplied", fmt.Sprintf(
		"HNS %d.%d accepted ModifyLoadBalancer but kept the old endpoints: load balancers are replaced (delete and create) from now on",
		d.features.Version.Major, d.features.Version.Minor))
}

// recreate replaces a load balancer where HNS cannot modify one.
func (d *Driver) recreate(key string, have installed, spec LoadBalancer) error {
	if err := d.c.DeleteLoadBalancer(have.ID); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	d.forget(key, have.ID)
	lb, err := d.c.CreateLoadBalancer(&spec)
	if err != nil {
		return err
	}
	d.setInstalled(key, installed{ID: lb.ID, Spec: normalize(*lb)})
	d.owned.add(lb.ID, key)
	return nil
}

// setInstalled records what HNS holds for a key, keeping the count of
// load balancers each endpoint is used by.
func (d *Driver) setInstalled(key string, in installed) {
	if old, ok := d.inst[key]; ok {
		d.count(old.Spec.HostComputeEndpoints, -1)
	}
	d.inst[key] = in
	d.count(in.Spec.HostComputeEndpoints, +1)
}

func (d *Driver) forget(key, id string) {
	if old, ok := d.inst[key]; ok {
		d.count(old.Spec.HostComputeEndpoints, -1)
	}
	delete(d.inst, key)
	d.owned.remove(id)
}

func (d *Driver) count(ids []string, delta int) {
	for _, id := range ids {
		d.refs[id] += delta
		if d.refs[id] <= 0 {
			delete(d.refs, id)
		}
	}
}

// spec turns a desired load balancer into HNS's form: endpoint IPs become
// the CNI's endpoints (local pods) or this driver's remote endpoints,
// created when first needed.
func (d *Driver) spec(want DesiredLB, refreshed *bool) (LoadBalancer, error) {
	ids := make([]string, 0, len(want.Endpoints))
	for _, e := range want.Endpoints {
		ip := e.IP.String()
		if e.Local {
			id, ok := d.local[ip]
			if !ok && !*refreshed {
				*refreshed = true
				if err := d.refreshEndpoints(); err != nil {
					return LoadBalancer{}, err
				}
				id, ok = d.local[ip]
			}
			if !ok {
				d.report(want.Service, "HNSEndpointMissing", "local endpoint "+ip+" has no HNS endpoint yet (the CNI creates it): left out")
				continue
			}
			ids = append(ids, id)
			continue
		}
		id, err := d.remoteEndpoint(e.IP)
		if err != nil {
			return LoadBalancer{}, err
		}
		ids = append(ids, id)
	}
	return normalize(want.LoadBalancer(ids)), nil
}

// remoteEndpoint returns (creating it if needed) the remote endpoint of a
// backend on another node.
func (d *Driver) remoteEndpoint(ip netip.Addr) (string, error) {
	if id, ok := d.remote[ip.String()]; ok {
		return id, nil
	}
	var nodeIP netip.Addr
	for _, n := range d.nodeIPs {
		if graph.FamilyOf(n) == graph.FamilyOf(ip) {
			nodeIP = n
		}
	}
	ep, err := d.c.CreateEndpoint(d.network.ID, RemoteEndpoint(d.network, ip, nodeIP))
	if err != nil {
		return "", fmt.Errorf("creating the remote endpoint %s: %w", ip, err)
	}
	d.remote[ip.String()], d.remoteIP[ep.ID] = ep.ID, ip.String()
	return ep.ID, nil
}

// collectRemote deletes this driver's remote endpoints that no load
// balancer uses any more (among those whose users changed).
func (d *Driver) collectRemote(candidates []string) error {
	var errs []error
	for _, id := range candidates {
		ip, ours := d.remoteIP[id]
		if !ours || d.refs[id] > 0 {
			continue
		}
		if err := d.c.DeleteEndpoint(id); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, fmt.Errorf("deleting the remote endpoint %s: %w", ip, err))
			continue
		}
		delete(d.remote, ip)
		delete(d.remoteIP, id)
	}
	return errors.Join(errs...)
}

// normalize orders a load balancer's lists so equal ones compare equal.
func normalize(lb LoadBalancer) LoadBalancer {
	lb.ID = ""
	lb.HostComputeEndpoints = slices.Sorted(slices.Values(lb.HostComputeEndpoints))
	lb.FrontendVIPs = slices.Sorted(slices.Values(lb.FrontendVIPs))
	if len(lb.FrontendVIPs) == 0 {
		lb.FrontendVIPs = nil
	}
	return lb
}

// onlyEndpointsDiffer tells the changes made in place: ModifyLoadBalancer
// is used for the hot path (endpoints coming and going); a change of
// flags, distribution, ports or source VIP (rare: a policy edit) replaces
// the load balancer, as every HNS version supports.
func onlyEndpointsDiffer(a, b LoadBalancer) bool {
	a.HostComputeEndpoints = b.HostComputeEndpoints
	return equalSpec(a, b)
}

func equalSpec(a, b LoadBalancer) bool {
	return a.SourceVIP == b.SourceVIP && a.Flags == b.Flags && a.SchemaVersion == b.SchemaVersion &&
		slices.Equal(a.HostComputeEndpoints, b.HostComputeEndpoints) &&
		slices.Equal(a.FrontendVIPs, b.FrontendVIPs) && slices.Equal(a.PortMappings, b.PortMappings)
}

// permanent tells failures HNS would repeat until something else changes.
// Besides a frontend another component holds, HNS refusing the object
// itself (E_INVALIDARG, "the parameter is incorrect") is permanent.
func permanent(err error) bool {
	return errors.Is(err, ErrFrontendInUse) || errors.Is(err, ErrTooManyEndpoints) ||
		strings.Contains(strings.ToLower(err.Error()), "parameter is incorrect")
}

func isNotImplemented(err error) bool { return errors.Is(err, ErrNotImplemented) }

// serviceOf names the service port a load balancer key belongs to (the
// zero name for one that is only installed, being deleted).
func (d *Driver) serviceOf(key string) graph.ServicePortName {
	return d.desired[key].Service
}
