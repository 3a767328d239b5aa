package hns

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/klog/v2"
)

// Cleanup implements dataplanes.Driver: the load balancers recorded as
// this driver's and the remote and ClusterIP endpoints named as its own
// are deleted; nothing else is touched. The source VIP's endpoint stays
// (upstream never deletes it; the node's other networking may use it).
func (d *Driver) Cleanup(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.refresh(); err != nil {
		return err
	}
	var errs []error
	n := 0
	for key, in := range d.inst {
		if err := d.c.DeleteLoadBalancer(in.ID); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
			continue
		}
		d.forget(key, in.ID)
		n++
	}
	eps, err := d.c.Endpoints(d.network.ID)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, ep := range eps {
		if (strings.HasPrefix(ep.Name, RemotePrefix) || strings.HasPrefix(ep.Name, VIPEndpointPrefix)) && ep.Flags&EndpointFlagRemote != 0 {
			if err := d.c.DeleteEndpoint(ep.ID); err != nil && !errors.Is(err, ErrNotFound) {
				errs = append(errs, err)
			}
		}
	}
	if err := d.owned.saveIfChanged(d.opts.StateFile); err != nil {
		errs = append(errs, err)
	}
	klog.InfoS("Removed Switchyard's HNS load balancers and remote endpoints", "loadBalancers", n)
	return errors.Join(errs...)
}

// Close implements dataplanes.Driver; HNS keeps its objects. It gives the
// instance lock up.
func (d *Driver) Close() error {
	d.lock.Release()
	return nil
}
