package ovsdb

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb/vswitch"
)

// PortSpec is a port with one interface, as the driver (gateway, tunnel)
// and switchyard-cni (pods) add them.
type PortSpec struct {
	Name string
	// Type is the interface type: "" for a network device that exists
	// (a pod's veth), "internal", "vxlan", "geneve".
	Type        string
	Options     map[string]string
	MTURequest  int // 0: not set
	ExternalIDs map[string]string
}

// ErrNoBridge is returned when the bridge does not exist.
var ErrNoBridge = errors.New("no such bridge")

// BridgeExists reports whether the bridge is in the database.
func (cl *Client) BridgeExists(ctx context.Context, bridge string) (bool, error) {
	err := cl.c.Get(ctx, &vswitch.Bridge{Name: bridge})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, client.ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("OVSDB: reading bridge %s: %w", bridge, err)
}

// AddPort adds a port to the bridge. When the bridge already has a port of
// that name, its interface is brought to the spec instead (type, options,
// mtu_request, external_ids), so adding is idempotent. A port of that
// name on another bridge is an error.
func (cl *Client) AddPort(ctx context.Context, bridge string, p PortSpec) error {
	br := &vswitch.Bridge{Name: bridge}
	if err := cl.c.Get(ctx, br); err != nil {
		if errors.Is(err, client.ErrNotFound) {
			return fmt.Errorf("%w %s", ErrNoBridge, bridge)
		}
		return fmt.Errorf("OVSDB: reading bridge %s: %w", bridge, err)
	}
	iface := &vswitch.Interface{UUID: "sy_iface", Name: p.Name, Type: p.Type,
		Options: maps.Clone(p.Options), ExternalIDs: maps.Clone(p.ExternalIDs)}
	if p.MTURequest > 0 {
		iface.MTURequest = &p.MTURequest
	}
	existing := &vswitch.Port{Name: p.Name}
	switch err := cl.c.Get(ctx, existing); {
	case err == nil:
		if !slices.Contains(br.Ports, existing.UUID) {
			return fmt.Errorf("OVSDB: port %s exists on another bridge", p.Name)
		}
		if len(existing.Interfaces) != 1 {
			return fmt.Errorf("OVSDB: port %s has %d interfaces", p.Name, len(existing.Interfaces))
		}
		iface.UUID = existing.Interfaces[0]
		ops, err := cl.c.Where(iface).Update(iface, &iface.Type, &iface.Options, &iface.MTURequest, &iface.ExternalIDs)
		if err != nil {
			return err
		}
		return cl.transact(ctx, "updating port "+p.Name, ops)
	case !errors.Is(err, client.ErrNotFound):
		return fmt.Errorf("OVSDB: reading port %s: %w", p.Name, err)
	}
	port := &vswitch.Port{UUID: "sy_port", Name: p.Name, Interfaces: []string{iface.UUID}, ExternalIDs: maps.Clone(p.ExternalIDs)}
	var ops []libovsdb.Operation
	for _, m := range []model.Model{iface, port} {
		o, err := cl.c.Create(m)
		if err != nil {
			return err
		}
		ops = append(ops, o...)
	}
	o, err := cl.c.Where(br).Mutate(br, model.Mutation{Field: &br.Ports, Mutator: libovsdb.MutateOperationInsert, Value: []string{port.UUID}})
	if err != nil {
		return err
	}
	return cl.transact(ctx, "adding port "+p.Name, append(ops, o...))
}

// DeletePort removes a port from the bridge; a port that is not there is
// no error.
func (cl *Client) DeletePort(ctx context.Context, bridge, name string) error {
	br := &vswitch.Bridge{Name: bridge}
	if err := cl.c.Get(ctx, br); err != nil {
		if errors.Is(err, client.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("OVSDB: reading bridge %s: %w", bridge, err)
	}
	port := &vswitch.Port{Name: name}
	if err := cl.c.Get(ctx, port); err != nil {
		if errors.Is(err, client.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("OVSDB: reading port %s: %w", name, err)
	}
	if !slices.Contains(br.Ports, port.UUID) {
		return nil
	}
	ops, err := cl.c.Where(br).Mutate(br, model.Mutation{Field: &br.Ports, Mutator: libovsdb.MutateOperationDelete, Value: []string{port.UUID}})
	if err != nil {
		return err
	}
	return cl.transact(ctx, "deleting port "+name, ops)
}

// DeleteBridge removes a bridge (and with it its ports); a missing bridge
// is no error.
func (cl *Client) DeleteBridge(ctx context.Context, name string) error {
	br := &vswitch.Bridge{Name: name}
	if err := cl.c.Get(ctx, br); err != nil {
		if errors.Is(err, client.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("OVSDB: reading bridge %s: %w", name, err)
	}
	var roots []vswitch.OpenvSwitch
	if err := cl.c.List(ctx, &roots); err != nil || len(roots) != 1 {
		return fmt.Errorf("OVSDB has no Open_vSwitch row: %v", err)
	}
	root := &vswitch.OpenvSwitch{UUID: roots[0].UUID}
	ops, err := cl.c.Where(root).Mutate(root, model.Mutation{Field: &root.Bridges, Mutator: libovsdb.MutateOperationDelete, Value: []string{br.UUID}})
	if err != nil {
		return err
	}
	return cl.transact(ctx, "deleting bridge "+name, ops)
}

// SetInterfaceExternalIDs sets keys of an interface's external_ids,
// keeping the others.
func (cl *Client) SetInterfaceExternalIDs(ctx context.Context, name string, ids map[string]string) error {
	iface := &vswitch.Interface{Name: name}
	if err := cl.c.Get(ctx, iface); err != nil {
		return fmt.Errorf("OVSDB: interface %s: %w", name, err)
	}
	ops, err := cl.c.Where(iface).Mutate(iface, model.Mutation{Field: &iface.ExternalIDs, Mutator: libovsdb.MutateOperationInsert, Value: ids})
	if err != nil {
		return err
	}
	// insert leaves existing keys alone: delete them first.
	keys := make([]string, 0, len(ids))
	for k := range ids {
		keys = append(keys, k)
	}
	del, err := cl.c.Where(iface).Mutate(iface, model.Mutation{Field: &iface.ExternalIDs, Mutator: libovsdb.MutateOperationDelete, Value: keys})
	if err != nil {
		return err
	}
	return cl.transact(ctx, "setting external_ids of "+name, append(del, ops...))
}

// Interface returns one interface by name (false if there is none).
func (cl *Client) Interface(ctx context.Context, name string) (Interface, bool, error) {
	i := &vswitch.Interface{Name: name}
	switch err := cl.c.Get(ctx, i); {
	case err == nil:
		return interfaceOf(i), true, nil
	case errors.Is(err, client.ErrNotFound):
		return Interface{}, false, nil
	default:
		return Interface{}, false, fmt.Errorf("OVSDB: interface %s: %w", name, err)
	}
}

func (cl *Client) transact(ctx context.Context, what string, ops []libovsdb.Operation) error {
	res, err := cl.c.Transact(ctx, ops...)
	if err == nil {
		_, err = libovsdb.CheckOperationResults(res, ops)
	}
	if err != nil {
		return fmt.Errorf("OVSDB: %s: %w", what, err)
	}
	return nil
}

// BridgeOwnedAndEmpty reports whether switchyard made the bridge and no
// port but its own internal one is left on it.
func (cl *Client) BridgeOwnedAndEmpty(ctx context.Context, name string) (owned, empty bool, err error) {
	br := &vswitch.Bridge{Name: name}
	if err := cl.c.Get(ctx, br); err != nil {
		if errors.Is(err, client.ErrNotFound) {
			return false, false, nil
		}
		return false, false, fmt.Errorf("OVSDB: reading bridge %s: %w", name, err)
	}
	if br.ExternalIDs[OwnerKey] != "true" {
		return false, false, nil
	}
	for _, pu := range br.Ports {
		p := &vswitch.Port{UUID: pu}
		if err := cl.c.Get(ctx, p); err == nil && p.Name != name {
			return true, false, nil
		}
	}
	return true, true, nil
}
