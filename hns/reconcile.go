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

// errLater marks a key left for a later sync (the stale-delete bound).
var errLater = errors.New("left for a later sync")

// errRetryTruncated asks for a key to be tried again: HNS has just refused
// a load balancer for its number of endpoints, and the driver truncates
// from now on.
var errRetryTruncated = errors.New("retry with at most MaxBackends endpoints")

// round is what one reconcile pass carries between keys.
type round struct {
	full      bool
	refreshed bool     // the endpoints were re-read in this round
	deleted   int      // stale load balancers deleted (full syncs)
	unused    []string // remote endpoint IDs whose last user may be gone
}

// reconcile brings every touched key to its desired state with the
// fewest HNS calls. A load balancer whose call fails is held back and
// tried again after a backoff, one HNS refuses as it will again (a
// frontend another component holds) is left until it changes or the next
// full sync; both are reported and returned as a dataplanes.Degraded, and
// every other key is programmed. Failures of the node's side (the
// network, the source VIP, an object HNS lost) are returned as errors:
// the runner retries the batch with everything still pending.
func (d *Driver) reconcile(full bool) error {
	if !full {
		if err := d.recheckNetwork(); err != nil {
			return err
		}
	}
	if d.stale && !full { // a full sync has just refreshed
		if err := d.refresh(); err != nil {
			return err
		}
		for k := range d.desired {
			d.touched[k] = true // what vanished is recreated now
		}
		d.touchAllVIPs()
	}
	d.stale = false
	r := &round{full: full}
	if full {
		for _, id := range d.remote {
			r.unused = append(r.unused, id) // leftovers of an earlier run too
		}
		d.touchAllVIPs()
	}
	if err := d.ensureSourceVIPEndpoint(); err != nil {
		return err
	}
	var transient []error
	if err := d.repairProviderAddresses(); err != nil {
		transient = append(transient, err)
	}
	d.syncVIPEndpoints()

	now := d.held.Now()
	retrying, include := d.held.StartRound(now, full)
	keys := make([]string, 0, len(d.touched))
	for k := range d.touched {
		if include(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		err := d.reconcileKey(key, r)
		if errors.Is(err, errRetryTruncated) {
			err = d.reconcileKey(key, r)
		}
		switch {
		case errors.Is(err, errLater):
		case err != nil:
			if nodeErr := d.failed(key, err); nodeErr != nil {
				transient = append(transient, nodeErr)
			}
		default:
			delete(d.touched, key)
			delete(d.refused, key)
		}
	}
	if err := d.collectRemote(r.unused); err != nil {
		transient = append(transient, err)
	}
	if err := d.owned.saveIfChanged(d.opts.StateFile); err != nil {
		transient = append(transient, fmt.Errorf("saving %s: %w", d.opts.StateFile, err))
	}
	if err := errors.Join(transient...); err != nil {
		return err
	}
	d.held.EndRound(retrying, now)
	return d.degraded()
}

// reconcileKey brings one load balancer to its desired state.
func (d *Driver) reconcileKey(key string, r *round) error {
	want, isDesired := d.desired[key]
	have, isInstalled := d.inst[key]
	var spec LoadBalancer
	if isDesired {
		if err := d.vipEndpointMissing(want); err != nil {
			return err
		}
		if d.maxBackends > 0 && len(want.Endpoints) > d.maxBackends {
			d.report(want.Service, "HNSCannotProgram", fmt.Sprintf("%s: %d endpoints, this HNS takes %d: kept this node's first, then the rest in order",
				want.Kind, len(want.Endpoints), d.maxBackends))
			want = want.Truncated(d.maxBackends)
		}
		var err error
		if spec, err = d.resolve(want, r); err != nil {
			return err
		}
		if len(spec.HostComputeEndpoints) == 0 {
			isDesired = false // no endpoint HNS knows of: no load balancer
		}
	}
	switch {
	case !isDesired && !isInstalled:
	case !isDesired:
		if r.full && r.deleted >= maxStaleDeletes {
			return errLater
		}
		r.deleted++
		if err := d.c.DeleteLoadBalancer(have.ID); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		r.unused = append(r.unused, have.Echo.HostComputeEndpoints...)
		d.forget(key, have.ID)
	case isInstalled && have.same(spec):
	case isInstalled && d.features.ModifyLoadBalancer && have.onlyEndpointsDiffer(spec):
		r.unused = append(r.unused, have.Echo.HostComputeEndpoints...)
		return d.modify(key, have, spec)
	case isInstalled:
		r.unused = append(r.unused, have.Echo.HostComputeEndpoints...)
		return d.recreate(key, have, spec)
	default:
		return d.create(key, spec)
	}
	return nil
}

// modify changes a load balancer's endpoints in place, and reads it back.
func (d *Driver) modify(key string, have installed, spec LoadBalancer) error {
	lb, err := d.c.UpdateLoadBalancer(have.ID, &spec)
	switch {
	case isNotImplemented(err):
		klog.InfoS("HNS does not implement ModifyLoadBalancer; replacing load balancers instead")
		d.features.ModifyLoadBalancer = false
		return d.recreate(key, have, spec)
	case err != nil:
		return d.refusedSize(key, err, spec)
	}
	applied, err := d.modifyApplied(lb.ID, spec)
	if err != nil {
		return err
	}
	if !applied {
		d.modifyFailed(key)
		return d.recreate(key, have, spec)
	}
	d.setInstalled(key, installed{ID: lb.ID, Echo: normalize(*lb), Asked: have.Asked})
	return nil
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
	return sameEndpoints(*got, spec), nil
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
	return d.create(key, spec)
}

// create makes a load balancer and records it as this driver's; the
// intent goes into the record first (ownedState).
func (d *Driver) create(key string, spec LoadBalancer) error {
	asked := askedOf(spec)
	if err := d.owned.intend(d.opts.StateFile, key, echoDigest(spec), asked); err != nil {
		return fmt.Errorf("recording the intent to create a load balancer in %s: %w", d.opts.StateFile, err)
	}
	lb, err := d.c.CreateLoadBalancer(&spec)
	if errors.Is(err, ErrFrontendInUse) && d.adoptIntendedKey(key) {
		return nil // ours after all: created by a call whose answer was lost
	}
	if err != nil {
		return d.refusedSize(key, err, spec)
	}
	d.setInstalled(key, installed{ID: lb.ID, Echo: normalize(*lb), Asked: asked})
	d.owned.add(lb.ID, key, asked)
	return nil
}

// refusedSize tells a refusal of a load balancer for its number of
// endpoints: the first time HNS refuses one with more than MaxBackends
// (with its own "too many" answer or one it would repeat), the driver
// says which HNS refused, truncates every load balancer from then on, and
// asks for the key to be tried again. Builds that take more endpoints
// get them all.
func (d *Driver) refusedSize(key string, err error, spec LoadBalancer) error {
	if d.maxBackends > 0 || len(spec.HostComputeEndpoints) <= MaxBackends || errors.Is(err, ErrFrontendInUse) ||
		!(errors.Is(err, ErrTooManyEndpoints) || permanent(err)) {
		return err
	}
	d.maxBackends = MaxBackends
	d.report(d.serviceOf(key), "HNSRefused", fmt.Sprintf(
		"HNS %d.%d refused a load balancer with %d endpoints (%v): load balancers keep at most %d endpoints from now on, this node's first",
		d.features.Version.Major, d.features.Version.Minor, len(spec.HostComputeEndpoints), err, MaxBackends))
	return errRetryTruncated
}

// setInstalled records what HNS holds for a key, keeping the count of
// load balancers each endpoint is used by.
func (d *Driver) setInstalled(key string, in installed) {
	if old, ok := d.inst[key]; ok {
		d.count(old.Echo.HostComputeEndpoints, -1)
	}
	d.inst[key] = in
	d.count(in.Echo.HostComputeEndpoints, +1)
}

func (d *Driver) forget(key, id string) {
	if old, ok := d.inst[key]; ok {
		d.count(old.Echo.HostComputeEndpoints, -1)
	}
	delete(d.inst, key)
	d.owned.remove(id)
}

func (d *Driver) count(ids []string, delta int) {
	for _, id := range endpointSet(ids) {
		d.refs[id] += delta
		if d.refs[id] <= 0 {
			delete(d.refs, id)
		}
	}
}

// resolve turns a desired load balancer into HNS's form: endpoint IPs become
// the CNI's endpoints (local pods) or this driver's remote endpoints,
// which it creates when first needed (HNS calls: not a pure mapping).
func (d *Driver) resolve(want DesiredLB, r *round) (LoadBalancer, error) {
	ids := make([]string, 0, len(want.Endpoints))
	for _, e := range want.Endpoints {
		ip := e.IP.String()
		if e.Local {
			id, ok := d.local[ip]
			if !ok && !r.refreshed {
				r.refreshed = true
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
	nodeIP, _ := graph.FirstOfFamily(d.nodeIPs, graph.FamilyOf(ip))
	want := RemoteEndpoint(d.network, ip, nodeIP)
	ep, err := d.c.CreateEndpoint(d.network.ID, want)
	if err != nil {
		return "", fmt.Errorf("creating the remote endpoint %s: %w", ip, err)
	}
	d.remote[ip.String()], d.remoteIP[idKey(ep.ID)] = ep.ID, ip.String()
	d.remotePA[idKey(ep.ID)] = want.ProviderAddress()
	return ep.ID, nil
}

// collectRemote deletes this driver's remote endpoints that no load
// balancer uses any more (among those whose users changed).
func (d *Driver) collectRemote(candidates []string) error {
	var errs []error
	for _, id := range candidates {
		ip, ours := d.remoteIP[idKey(id)]
		if !ours || d.refs[idKey(id)] > 0 {
			continue
		}
		if err := d.deleteRemote(ip); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteRemote deletes this driver's remote endpoint of a backend IP.
func (d *Driver) deleteRemote(ip string) error {
	id, ok := d.remote[ip]
	if !ok {
		return nil
	}
	if err := d.c.DeleteEndpoint(id); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("deleting the remote endpoint %s: %w", ip, err)
	}
	delete(d.remote, ip)
	delete(d.remoteIP, idKey(id))
	delete(d.remotePA, idKey(id))
	return nil
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
