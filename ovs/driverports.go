package ovs

import (
	"context"
	"time"

	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb"
	"k8s.io/klog/v2"
)

// ensureOwnPorts adds the gateway port and, in overlay mode, the tunnel
// port (removing a tunnel port left from an overlay run in routed mode).
func ensureOwnPorts(ctx context.Context, db portDatabase, o Options) error {
	if err := db.AddPort(ctx, o.Bridge, ovsdb.PortSpec{Name: o.GatewayInterface, Type: "internal",
		ExternalIDs: map[string]string{KeyRole: "gateway"}}); err != nil {
		return err
	}
	if o.Encap == EncapNone {
		return db.DeletePort(ctx, o.Bridge, TunnelPortName)
	}
	return db.AddPort(ctx, o.Bridge, ovsdb.PortSpec{Name: TunnelPortName, Type: o.Encap,
		Options: map[string]string{"remote_ip": "flow"}, ExternalIDs: map[string]string{KeyRole: "tunnel"}})
}

// refreshPorts reads the bridge's ports into the model.
func (d *Driver) refreshPorts(ctx context.Context) error {
	ifaces, err := d.db.Interfaces(ctx, d.opts.Bridge)
	if err != nil {
		return err
	}
	bp := engine.PortsFromInterfaces(ifaces, d.opts.GatewayInterface, TunnelPortName)
	for _, p := range bp.Problems {
		klog.ErrorS(nil, "Ignoring a port whose external_ids are unusable", "problem", p)
	}
	d.mu.Lock()
	d.ports = bp
	d.model.SetPorts(bp)
	d.mu.Unlock()
	return nil
}

// watchPorts follows OVSDB changes (pods coming and going, the gateway's
// MAC) into the model and asks the runner for a round, which commits
// them (Env.RequestRound): the driver commits only in Sync and Apply.
func (d *Driver) watchPorts() {
	for {
		select {
		case <-d.stop:
			return
		case <-d.portsCh:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := d.refreshPorts(ctx); err != nil {
			klog.ErrorS(err, "Reading the bridge's ports failed")
		} else {
			d.env.Request()
		}
		cancel()
	}
}
