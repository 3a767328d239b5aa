// Package ovsdb is the OVSDB side of the OVS driver and of switchyard-cni,
// through libovsdb: it creates or checks the bridge, adds and removes its
// ports (the gateway, the tunnel, pods), and lists and watches the
// bridge's interfaces, from which the driver learns pods and its own ports.
package ovsdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"
	libovsdb "github.com/ovn-kubernetes/libovsdb/ovsdb"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb/vswitch"
	"k8s.io/klog/v2"
)

// Client is a connection to ovsdb-server with a cache of the bridge,
// port and interface tables.
type Client struct {
	c client.Client

	mu       sync.Mutex
	handlers []func()
}

// Connect dials ovsdb-server's unix socket and starts monitoring. It
// reconnects by itself afterwards.
func Connect(ctx context.Context, socket string) (*Client, error) {
	if _, err := os.Stat(socket); err != nil {
		return nil, fmt.Errorf("OVSDB socket: %w (is ovsdb-server running? see --ovs-rundir)", err)
	}
	dbModel, err := vswitch.FullDatabaseModel()
	if err != nil {
		return nil, err
	}
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval, bo.MaxElapsedTime = 100*time.Millisecond, 2*time.Second, 0 // retry forever
	logger := klog.Background().WithName("libovsdb")
	c, err := client.NewOVSDBClient(dbModel, client.WithEndpoint("unix:"+socket),
		client.WithReconnect(5*time.Second, bo), client.WithLogger(&logger))
	if err != nil {
		return nil, err
	}
	if err := c.Connect(ctx); err != nil {
		return nil, fmt.Errorf("OVSDB %s: %w", socket, err)
	}
	cl := &Client{c: c}
	c.Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc:    func(string, model.Model) { cl.notify() },
		UpdateFunc: func(string, model.Model, model.Model) { cl.notify() },
		DeleteFunc: func(string, model.Model) { cl.notify() },
	})
	if _, err := c.Monitor(ctx, c.NewMonitor(
		client.WithTable(&vswitch.OpenvSwitch{}), client.WithTable(&vswitch.Bridge{}),
		client.WithTable(&vswitch.Port{}), client.WithTable(&vswitch.Interface{}),
		client.WithTable(&vswitch.Datapath{}), client.WithTable(&vswitch.CTZone{}), client.WithTable(&vswitch.CTTimeoutPolicy{}))); err != nil {
		c.Close()
		return nil, fmt.Errorf("OVSDB monitor: %w", err)
	}
	return cl, nil
}

// Close disconnects.
func (cl *Client) Close() { cl.c.Close() }

// OnChange registers f to run (on libovsdb's goroutine: keep it short)
// after any change of the monitored tables, including reconnections.
func (cl *Client) OnChange(f func()) {
	cl.mu.Lock()
	cl.handlers = append(cl.handlers, f)
	cl.mu.Unlock()
}

func (cl *Client) notify() {
	cl.mu.Lock()
	hs := slices.Clone(cl.handlers)
	cl.mu.Unlock()
	for _, h := range hs {
		h()
	}
}

// OwnerKey marks a bridge Switchyard created.
const OwnerKey = "switchyard.io/owner"

// EnsureBridge creates the bridge (datapath type dpType, OpenFlow 1.3 and
// 1.5, fail mode secure) or checks an existing one: it must speak
// OpenFlow 1.5, and it is not changed behind its owner's back.
func (cl *Client) EnsureBridge(ctx context.Context, name, dpType string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	br := &vswitch.Bridge{Name: name}
	switch err := cl.c.Get(ctx, br); {
	case err == nil:
		if !slices.Contains(br.Protocols, vswitch.BridgeProtocolsOpenflow15) {
			return fmt.Errorf("bridge %s does not enable OpenFlow15 (protocols %v); enable it with "+
				"`ovs-vsctl set bridge %s protocols=OpenFlow13,OpenFlow15`", name, br.Protocols, name)
		}
		if br.DatapathType != "" && br.DatapathType != dpType {
			klog.InfoS("Using an existing bridge with another datapath type", "bridge", name, "datapathType", br.DatapathType, "configured", dpType)
		}
		return nil
	case !errors.Is(err, client.ErrNotFound):
		return fmt.Errorf("OVSDB: reading bridge %s: %w", name, err)
	}

	var roots []vswitch.OpenvSwitch
	if err := cl.c.List(ctx, &roots); err != nil || len(roots) != 1 {
		return fmt.Errorf("OVSDB has no Open_vSwitch row (run `ovs-vsctl init`): %v", err)
	}
	fail := vswitch.BridgeFailModeSecure
	iface := &vswitch.Interface{UUID: "sy_iface", Name: name, Type: "internal"}
	port := &vswitch.Port{UUID: "sy_port", Name: name, Interfaces: []string{iface.UUID}}
	nb := &vswitch.Bridge{UUID: "sy_bridge", Name: name, DatapathType: dpType, FailMode: &fail,
		Protocols:   []string{vswitch.BridgeProtocolsOpenflow13, vswitch.BridgeProtocolsOpenflow15},
		ExternalIDs: map[string]string{OwnerKey: "true"}, Ports: []string{port.UUID}}
	var ops []libovsdb.Operation
	for _, m := range []model.Model{iface, port, nb} {
		o, err := cl.c.Create(m)
		if err != nil {
			return err
		}
		ops = append(ops, o...)
	}
	root := &vswitch.OpenvSwitch{UUID: roots[0].UUID}
	o, err := cl.c.Where(root).Mutate(root, model.Mutation{Field: &root.Bridges, Mutator: libovsdb.MutateOperationInsert, Value: []string{nb.UUID}})
	if err != nil {
		return err
	}
	ops = append(ops, o...)
	res, err := cl.c.Transact(ctx, ops...)
	if err == nil {
		_, err = libovsdb.CheckOperationResults(res, ops)
	}
	if err != nil {
		return fmt.Errorf("OVSDB: creating bridge %s: %w", name, err)
	}
	klog.InfoS("Created bridge", "bridge", name, "datapathType", dpType)
	return nil
}

// Interface is one interface of the bridge.
type Interface struct {
	Name        string
	Type        string
	OFPort      int    // -1: not (yet) attached
	MAC         string // mac_in_use ("" until OVS reports it)
	Error       string // why OVS could not attach it ("" if none)
	ExternalIDs map[string]string
}

// Interfaces lists the bridge's interfaces from the cache.
func (cl *Client) Interfaces(ctx context.Context, bridge string) ([]Interface, error) {
	br := &vswitch.Bridge{Name: bridge}
	if err := cl.c.Get(ctx, br); err != nil {
		if errors.Is(err, client.ErrNotFound) {
			return nil, fmt.Errorf("%w %s", ErrNoBridge, bridge)
		}
		return nil, fmt.Errorf("OVSDB: bridge %s: %w", bridge, err)
	}
	var out []Interface
	for _, pu := range br.Ports {
		p := &vswitch.Port{UUID: pu}
		if err := cl.c.Get(ctx, p); err != nil {
			continue // a port being added or removed
		}
		for _, iu := range p.Interfaces {
			i := &vswitch.Interface{UUID: iu}
			if err := cl.c.Get(ctx, i); err != nil {
				continue
			}
			out = append(out, interfaceOf(i))
		}
	}
	slices.SortFunc(out, func(a, b Interface) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func interfaceOf(i *vswitch.Interface) Interface {
	out := Interface{Name: i.Name, Type: i.Type, OFPort: -1, ExternalIDs: i.ExternalIDs}
	if i.Ofport != nil {
		out.OFPort = *i.Ofport
	}
	if i.MACInUse != nil {
		out.MAC = *i.MACInUse
	}
	if i.Error != nil {
		out.Error = *i.Error
	}
	return out
}
