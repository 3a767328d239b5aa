package ovs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/switchyard-proxy/switchyard/ovs/ovsdb"
	"github.com/switchyard-proxy/switchyard/ovs/podport"
)

// cleanupNode removes what the driver and switchyard-cni put on the node
// besides flows and groups: the host's routes and nftables table, the
// pods' ports and their veths, the gateway and tunnel ports, the bridge
// when switchyard made it and nothing else is on it, the node file, the
// allocations, and the CNI configuration and binary `switchyard install`
// wrote. Ports, bridges and files of others stay. Pods lose their network:
// this is uninstalling.
func (d *Driver) cleanupNode(ctx context.Context) error {
	o := d.opts
	d.hostMu.Lock() // an audit's host sync ends first
	defer d.hostMu.Unlock()
	var errs []error
	errs = append(errs, d.host.Cleanup(ctx))
	if d.db != nil {
		errs = append(errs, d.cleanupPorts(ctx))
	}
	errs = append(errs, removeFile(o.NodeFile), removeAll(filepath.Join(o.IPAMDir, podport.NetworkName)))
	errs = append(errs, uninstallCNI(o))
	return errors.Join(errs...)
}

// cleanupPorts removes the pods' ports and veths, the driver's own ports,
// and the bridge when switchyard made it and nothing else is on it (no
// other ports, flows or groups).
func (d *Driver) cleanupPorts(ctx context.Context) error {
	o := d.opts
	var errs []error
	ifaces, err := d.db.Interfaces(ctx, o.Bridge)
	if err != nil && !errors.Is(err, ovsdb.ErrNoBridge) {
		errs = append(errs, err)
	}
	for _, i := range ifaces {
		if i.ExternalIDs[podport.KeyContainerID] == "" {
			continue
		}
		errs = append(errs, d.db.DeletePort(ctx, o.Bridge, i.Name), d.host.DeleteLink(i.Name))
	}
	for _, port := range []string{TunnelPortName, o.GatewayInterface} {
		errs = append(errs, d.db.DeletePort(ctx, o.Bridge, port))
	}
	errs = append(errs, d.db.RemoveZoneTimeouts(ctx, "netdev", []int{int(o.CtZone), int(o.CtZone) + 1}))
	if owned, empty, err := d.db.BridgeOwnedAndEmpty(ctx, o.Bridge); err != nil {
		errs = append(errs, err)
	} else if owned && empty && !d.keepBridge {
		errs = append(errs, d.db.DeleteBridge(ctx, o.Bridge))
	}
	return errors.Join(errs...)
}

func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func removeAll(path string) error {
	if path == "" || path == "/" {
		return fmt.Errorf("refusing to remove %q", path)
	}
	return os.RemoveAll(path)
}
