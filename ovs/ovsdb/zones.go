package ovsdb

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb/vswitch"
)

// EnsureZoneTimeouts gives conntrack zones of a datapath type ("netdev")
// a timeout policy (Datapath, CT_Zone and CT_Timeout_Policy rows, as
// `ovs-vsctl add-zone-tp` makes them), marked as switchyard's. A zone that
// already has a policy of someone else's is left alone and named in the
// error.
func (cl *Client) EnsureZoneTimeouts(ctx context.Context, dpType string, zones []int, timeouts map[string]int) error {
	var roots []vswitch.OpenvSwitch
	if err := cl.c.List(ctx, &roots); err != nil || len(roots) != 1 {
		return fmt.Errorf("OVSDB has no Open_vSwitch row: %v", err)
	}
	root := &roots[0]
	var ops []libovsdb.Operation
	add := func(o []libovsdb.Operation, err error) error {
		ops = append(ops, o...)
		return err
	}
	owned := map[string]string{OwnerKey: "true"}
	newZone := func(i int, zone int) (string, error) {
		tp := &vswitch.CTTimeoutPolicy{UUID: fmt.Sprintf("sy_tp%d", i), Timeouts: maps.Clone(timeouts), ExternalIDs: owned}
		z := &vswitch.CTZone{UUID: fmt.Sprintf("sy_zone%d", i), TimeoutPolicy: &tp.UUID, ExternalIDs: owned}
		for _, m := range []model.Model{tp, z} {
			if err := add(cl.c.Create(m)); err != nil {
				return "", err
			}
		}
		return z.UUID, nil
	}

	dpUUID, ok := root.Datapaths[dpType]
	if !ok {
		dp := &vswitch.Datapath{UUID: "sy_dp", CTZones: map[int]string{}}
		for i, zone := range zones {
			u, err := newZone(i, zone)
			if err != nil {
				return err
			}
			dp.CTZones[zone] = u
		}
		if err := add(cl.c.Create(dp)); err != nil {
			return err
		}
		r := &vswitch.OpenvSwitch{UUID: root.UUID}
		if err := add(cl.c.Where(r).Mutate(r, model.Mutation{Field: &r.Datapaths, Mutator: libovsdb.MutateOperationInsert,
			Value: map[string]string{dpType: dp.UUID}})); err != nil {
			return err
		}
		return cl.transact(ctx, "creating the "+dpType+" datapath's zone timeout policies", ops)
	}

	dp := &vswitch.Datapath{UUID: dpUUID}
	if err := cl.c.Get(ctx, dp); err != nil {
		return fmt.Errorf("OVSDB: datapath %s: %w", dpType, err)
	}
	var foreign []int
	for i, zone := range zones {
		zu, has := dp.CTZones[zone]
		if !has {
			u, err := newZone(i, zone)
			if err != nil {
				return err
			}
			d := &vswitch.Datapath{UUID: dpUUID}
			if err := add(cl.c.Where(d).Mutate(d, model.Mutation{Field: &d.CTZones, Mutator: libovsdb.MutateOperationInsert,
				Value: map[int]string{zone: u}})); err != nil {
				return err
			}
			continue
		}
		z := &vswitch.CTZone{UUID: zu}
		if err := cl.c.Get(ctx, z); err != nil {
			return fmt.Errorf("OVSDB: conntrack zone %d: %w", zone, err)
		}
		if z.ExternalIDs[OwnerKey] != "true" || z.TimeoutPolicy == nil {
			foreign = append(foreign, zone)
			continue
		}
		tp := &vswitch.CTTimeoutPolicy{UUID: *z.TimeoutPolicy}
		if err := cl.c.Get(ctx, tp); err != nil {
			return fmt.Errorf("OVSDB: timeout policy of zone %d: %w", zone, err)
		}
		if !maps.Equal(tp.Timeouts, timeouts) {
			tp.Timeouts = maps.Clone(timeouts)
			if err := add(cl.c.Where(tp).Update(tp, &tp.Timeouts)); err != nil {
				return err
			}
		}
	}
	if len(ops) > 0 {
		if err := cl.transact(ctx, "setting zone timeout policies", ops); err != nil {
			return err
		}
	}
	if len(foreign) > 0 {
		return fmt.Errorf("conntrack zones %v of the %s datapath have another component's timeout policy: left as they are", foreign, dpType)
	}
	return nil
}

// RemoveZoneTimeouts removes switchyard's timeout policies from zones of a
// datapath type (the policies of others stay).
func (cl *Client) RemoveZoneTimeouts(ctx context.Context, dpType string, zones []int) error {
	var roots []vswitch.OpenvSwitch
	if err := cl.c.List(ctx, &roots); err != nil || len(roots) != 1 {
		return fmt.Errorf("OVSDB has no Open_vSwitch row: %v", err)
	}
	dpUUID, ok := roots[0].Datapaths[dpType]
	if !ok {
		return nil
	}
	dp := &vswitch.Datapath{UUID: dpUUID}
	if err := cl.c.Get(ctx, dp); err != nil {
		if errors.Is(err, client.ErrNotFound) {
			return nil
		}
		return err
	}
	var ours []int
	for _, zone := range zones {
		zu, has := dp.CTZones[zone]
		if !has {
			continue
		}
		z := &vswitch.CTZone{UUID: zu}
		if err := cl.c.Get(ctx, z); err == nil && z.ExternalIDs[OwnerKey] == "true" {
			ours = append(ours, zone)
		}
	}
	if len(ours) == 0 {
		return nil
	}
	ops, err := cl.c.Where(dp).Mutate(dp, model.Mutation{Field: &dp.CTZones, Mutator: libovsdb.MutateOperationDelete, Value: ours})
	if err != nil {
		return err
	}
	return cl.transact(ctx, "removing zone timeout policies", ops)
}

// BridgeDatapathType is the datapath type of a bridge ("" for the default,
// system).
func (cl *Client) BridgeDatapathType(ctx context.Context, name string) (string, error) {
	br := &vswitch.Bridge{Name: name}
	if err := cl.c.Get(ctx, br); err != nil {
		return "", fmt.Errorf("OVSDB: bridge %s: %w", name, err)
	}
	return br.DatapathType, nil
}
