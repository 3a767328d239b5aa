//go:build linux

package cni

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/plugins/pkg/ip"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb"
	"github.com/switchyard-proxy/switchyard/ovs/podport"
)

// Timeouts of one call.
var (
	// ovsTimeout bounds every OVSDB exchange.
	ovsTimeout = 10 * time.Second
	// programmedTimeout bounds the wait for the driver to program a new
	// pod's port.
	programmedTimeout = 20 * time.Second
)

// Funcs are the plugin's commands for skel.PluginMainFuncs.
func Funcs() skel.CNIFuncs {
	return skel.CNIFuncs{Add: Add, Del: Del, Check: Check}
}

func connect(c *NetConf) (*ovsdb.Client, error) {
	sock := filepath.Join(c.OVSRunDir, "db.sock")
	ctx, cancel := context.WithTimeout(context.Background(), ovsTimeout)
	defer cancel()
	db, err := ovsdb.Connect(ctx, sock)
	if err != nil {
		return nil, failure(types.ErrTryAgainLater, "Open vSwitch is not reachable", err)
	}
	return db, nil
}

// Del detaches a container: bridge port, veth, addresses. Each part that
// is already gone is skipped, so DEL can be repeated; it needs neither the
// node file nor the container's network namespace.
func Del(args *skel.CmdArgs) error {
	c, err := ParseNetConf(args.StdinData)
	if err != nil {
		return failure(types.ErrInvalidNetworkConfig, "bad network configuration", err)
	}
	hostName := podport.HostVethName(args.ContainerID, args.IfName)
	// No OVSDB socket at all: OVS is not on this node (any more), so no
	// port can be left on it.
	if _, err := os.Stat(filepath.Join(c.OVSRunDir, "db.sock")); err == nil {
		db, err := connect(c)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), ovsTimeout)
		err = db.DeletePort(ctx, c.Bridge, hostName)
		cancel()
		db.Close()
		if err != nil {
			return failure(types.ErrTryAgainLater, "removing the pod's port", err)
		}
	}
	if err := ip.DelLinkByName(hostName); err != nil && !errors.Is(err, ip.ErrLinkNotFound) {
		return failure(types.ErrInternal, "removing the pod's veth", err)
	}
	book, err := openAddressBook(c, podport.NodeNetwork{})
	if err != nil {
		return failure(types.ErrIOFailure, "address store", err)
	}
	defer book.close()
	if err := book.release(args.ContainerID, args.IfName); err != nil {
		return failure(types.ErrIOFailure, "releasing the pod's addresses", err)
	}
	return nil
}
