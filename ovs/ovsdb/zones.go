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
	w := &zoneWriter{cl: cl, timeouts: timeouts}
	dpUUID, ok := roots[0].Datapaths[dpType]
	if !ok {
		if err := w.createDatapath(roots[0].UUID, dpType, zones); err != nil {
			return err
		}
		return cl.transact(ctx, "creating the "+dpType+" datapath's zone timeout policies", w.ops)
	}
	dp := &vswitch.Datapath{UUID: dpUUID}
	if err := cl.c.Get(ctx, dp); err != nil {
		return fmt.Errorf("OVSDB: datapath %s: %w", dpType, err)
	}
	var foreign []int
	for i, zone := range zones {
		ours, err := w.ensureZone(ctx, dp, i, zone)
		if err != nil {
			return err
		}
		if !ours {
			foreign = append(foreign, zone)
		}
	}
	if len(w.ops) > 0 {
		if err := cl.transact(ctx, "setting zone timeout policies", w.ops); err != nil {
			return err
		}
	}
	if len(foreign) > 0 {
		return fmt.Errorf("conntrack zones %v of the %s datapath have another component's timeout policy: left as they are", foreign, dpType)
	}
	return nil
}

// zoneWriter gathers the operations of one EnsureZoneTimeouts.
type zoneWriter struct {
	cl       *Client
	timeouts map[string]int
	ops      []libovsdb.Operation
}

func (w *zoneWriter) add(o []libovsdb.Operation, err error) error {
	w.ops = append(w.ops, o...)
	return err
}

// newZone creates the i-th zone with its timeout policy, and returns its
// row's (named) UUID.
func (w *zoneWriter) newZone(i int) (string, error) {
	owned := map[string]string{OwnerKey: "true"}
	tp := &vswitch.CTTimeoutPolicy{UUID: fmt.Sprintf("sy_tp%d", i), Timeouts: maps.Clone(w.timeouts), ExternalIDs: owned}
	z := &vswitch.CTZone{UUID: fmt.Sprintf("sy_zone%d", i), TimeoutPolicy: &tp.UUID, ExternalIDs: owned}
	for _, m := range []model.Model{tp, z} {
		if err := w.add(w.cl.c.Create(m)); err != nil {
			return "", err
		}
	}
	return z.UUID, nil
}

// createDatapath creates the datapath type's row with every zone, and
// adds it to the root row.
func (w *zoneWriter) createDatapath(rootUUID, dpType string, zones []int) error {
	dp := &vswitch.Datapath{UUID: "sy_dp", CTZones: map[int]string{}}
	for i, zone := range zones {
		u, err := w.newZone(i)
		if err != nil {
			return err
		}
		dp.CTZones[zone] = u
	}
	if err := w.add(w.cl.c.Create(dp)); err != nil {
		return err
	}
	r := &vswitch.OpenvSwitch{UUID: rootUUID}
	return w.add(w.cl.c.Where(r).Mutate(r, model.Mutation{Field: &r.Datapaths, Mutator: libovsdb.MutateOperationInsert,
		Value: map[string]string{dpType: dp.UUID}}))
}

// ensureZone gives an existing datapath's zone our policy: creates the
// zone, or updates our policy's timeouts. It reports false for a zone with
// another component's policy, which it leaves alone.
func (w *zoneWriter) ensureZone(ctx context.Context, dp *vswitch.Datapath, i, zone int) (ours bool, err error) {
	zu, has := dp.CTZones[zone]
	if !has {
		u, err := w.newZone(i)
		if err != nil {
			return true, err
		}
		d := &vswitch.Datapath{UUID: dp.UUID}
		return true, w.add(w.cl.c.Where(d).Mutate(d, model.Mutation{Field: &d.CTZones, Mutator: libovsdb.MutateOperationInsert,
			Value: map[int]string{zone: u}}))
	}
	z := &vswitch.CTZone{UUID: zu}
	if err := w.cl.c.Get(ctx, z); err != nil {
		return true, fmt.Errorf("OVSDB: conntrack zone %d: %w", zone, err)
	}
	if z.ExternalIDs[OwnerKey] != "true" || z.TimeoutPolicy == nil {
		return false, nil
	}
	tp := &vswitch.CTTimeoutPolicy{UUID: *z.TimeoutPolicy}
	if err := w.cl.c.Get(ctx, tp); err != nil {
		return true, fmt.Errorf("OVSDB: timeout policy of zone %d: %w", zone, err)
	}
	if maps.Equal(tp.Timeouts, w.timeouts) {
		return true, nil
	}
	tp.Timeouts = maps.Clone(w.timeouts)
	return true, w.add(w.cl.c.Where(tp).Update(tp, &tp.Timeouts))
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
