//go:build linux

package cni

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/containernetworking/plugins/pkg/ip"
	"github.com/containernetworking/plugins/pkg/ipam"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb"
	"github.com/switchyard-proxy/switchyard/ovs/podport"
	"github.com/vishvananda/netlink"
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

// Add attaches a container: veth, addresses, routes, bridge port; then
// waits for switchyard to program the port. Anything done is undone when a
// later step fails.
func Add(args *skel.CmdArgs) (err error) {
	c, err := ParseNetConf(args.StdinData)
	if err != nil {
		return failure(types.ErrInvalidNetworkConfig, "bad network configuration", err)
	}
	podArgs, err := ParsePodArgs(args.Args)
	if err != nil {
		return failure(types.ErrInvalidEnvironmentVariables, "bad CNI_ARGS", err)
	}
	requested, err := requestedIPs(c, podArgs)
	if err != nil {
		return failure(types.ErrInvalidEnvironmentVariables, "bad requested IP", err)
	}
	node, err := podport.ReadNodeNetwork(c.NodeFile)
	if err != nil {
		return failure(types.ErrTryAgainLater, "no node network", err)
	}
	if len(node.PodCIDRs) == 0 {
		return failure(types.ErrTryAgainLater, fmt.Sprintf("node %s has no pod CIDR yet (its spec.podCIDRs is empty: does kube-controller-manager run with --allocate-node-cidrs?)", node.Node), nil)
	}
	netns, err := ns.GetNS(args.Netns)
	if err != nil {
		return failure(types.ErrInvalidNetNS, fmt.Sprintf("network namespace %q", args.Netns), err)
	}
	defer netns.Close()
	db, err := connect(c)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), ovsTimeout)
	defer cancel()
	if ok, err := db.BridgeExists(ctx, c.Bridge); err != nil {
		return failure(types.ErrTryAgainLater, "reading the bridge", err)
	} else if !ok {
		return failure(types.ErrTryAgainLater, fmt.Sprintf("bridge %s does not exist (switchyard creates it when it starts)", c.Bridge), nil)
	}

	book, err := openAddressBook(c, node)
	if err != nil {
		return failure(types.ErrIOFailure, "address store", err)
	}
	defer book.close()
	ipcs, err := book.allocate(args.ContainerID, args.IfName, requested)
	if err != nil {
		return err
	}
	hostName := podport.HostVethName(args.ContainerID, args.IfName)
	defer func() {
		if err != nil { // undo, keeping the first error
			dctx, dcancel := context.WithTimeout(context.Background(), ovsTimeout)
			_ = db.DeletePort(dctx, c.Bridge, hostName)
			dcancel()
			_ = ip.DelLinkByName(hostName)
			_ = book.release(args.ContainerID, args.IfName)
		}
	}()

	res := &current.Result{CNIVersion: current.ImplementedSpecVersion, DNS: c.DNS}
	var contMAC string
	err = netns.Do(func(hostNS ns.NetNS) error {
		hostIf, contIf, err := ip.SetupVethWithName(args.IfName, hostName, node.MTU, "", hostNS)
		if err != nil {
			return err
		}
		contMAC = contIf.HardwareAddr.String()
		res.Interfaces = []*current.Interface{
			{Name: hostIf.Name, Mac: hostIf.HardwareAddr.String()},
			{Name: contIf.Name, Mac: contMAC, Sandbox: netns.Path()},
		}
		for _, ipc := range ipcs {
			ipc.Interface = current.Int(1)
			res.IPs = append(res.IPs, ipc)
			res.Routes = append(res.Routes, &types.Route{Dst: defaultRoute(ipc.Address.IP), GW: ipc.Gateway})
		}
		if err := noDAD(args.IfName); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if !node.TxChecksumOffload {
			if err := txChecksumOff(args.IfName); err != nil {
				return err
			}
		}
		return ipam.ConfigureIface(args.IfName, res)
	})
	if err != nil {
		return failure(types.ErrInternal, "setting up the pod's interface", err)
	}
	if err = hostEndQuiet(hostName); err != nil {
		return failure(types.ErrInternal, "setting up the host's end", err)
	}
	if !node.TxChecksumOffload {
		if err = txChecksumOff(hostName); err != nil {
			return failure(types.ErrInternal, "setting up the host's end", err)
		}
	}

	var ips []string
	for _, ipc := range ipcs {
		ips = append(ips, ipc.Address.IP.String())
	}
	ids := map[string]string{
		podport.KeyPodIPs: strings.Join(ips, ","), podport.KeyPodMAC: contMAC,
		podport.KeyContainerID: args.ContainerID, podport.KeyIfName: args.IfName,
	}
	if p := podArgs.Pod(); p != "" {
		ids[podport.KeyPodName] = p
	}
	if err = db.AddPort(ctx, c.Bridge, ovsdb.PortSpec{Name: hostName, ExternalIDs: ids}); err != nil {
		return failure(types.ErrTryAgainLater, "adding the pod's port to "+c.Bridge, err)
	}
	if err = waitProgrammed(db, hostName); err != nil {
		return err
	}
	return types.PrintResult(res, c.CNIVersion)
}

// waitProgrammed waits until switchyard has installed the flows of the
// port, so the pod has its network from its first packet.
func waitProgrammed(db *ovsdb.Client, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), programmedTimeout)
	defer cancel()
	for {
		i, ok, err := db.Interface(ctx, name)
		if err != nil {
			return failure(types.ErrTryAgainLater, "reading the pod's port", err)
		}
		if ok && i.Error != "" {
			return failure(types.ErrInternal, "Open vSwitch cannot attach the pod's port", errors.New(i.Error))
		}
		if ok && i.OFPort > 0 && i.ExternalIDs[podport.KeyProgrammed] == fmt.Sprint(i.OFPort) {
			return nil
		}
		select {
		case <-ctx.Done():
			return failure(types.ErrTryAgainLater, fmt.Sprintf("switchyard did not program port %s within %v (is switchyard running on this node?)", name, programmedTimeout), nil)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func defaultRoute(ip net.IP) net.IPNet {
	if ip.To4() != nil {
		return net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}
	}
	return net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
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

// Check verifies that what ADD made is still there: the pod's interface
// with the addresses of the previous result and its default routes, the
// bridge port with its external_ids, the allocations.
func Check(args *skel.CmdArgs) error {
	c, err := ParseNetConf(args.StdinData)
	if err != nil {
		return failure(types.ErrInvalidNetworkConfig, "bad network configuration", err)
	}
	if c.RawPrevResult == nil {
		return failure(types.ErrInvalidNetworkConfig, "CHECK needs prevResult", nil)
	}
	if err := version.ParsePrevResult(&c.PluginConf); err != nil {
		return failure(types.ErrDecodingFailure, "prevResult", err)
	}
	prev, err := current.NewResultFromResult(c.PrevResult)
	if err != nil {
		return failure(types.ErrDecodingFailure, "prevResult", err)
	}
	var want []netip.Addr
	for _, ipc := range prev.IPs {
		a, _ := netip.AddrFromSlice(ipc.Address.IP)
		want = append(want, a.Unmap())
	}
	slices.SortFunc(want, func(a, b netip.Addr) int { return a.Compare(b) })

	netns, err := ns.GetNS(args.Netns)
	if err != nil {
		return failure(types.ErrInvalidNetNS, fmt.Sprintf("network namespace %q", args.Netns), err)
	}
	defer netns.Close()
	var contMAC string
	err = netns.Do(func(ns.NetNS) error {
		l, err := netlink.LinkByName(args.IfName)
		if err != nil {
			return fmt.Errorf("interface %s: %w", args.IfName, err)
		}
		contMAC = l.Attrs().HardwareAddr.String()
		addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		var have []netip.Addr
		for _, a := range addrs {
			if x, ok := netip.AddrFromSlice(a.IP); ok && !x.IsLinkLocalUnicast() {
				have = append(have, x.Unmap())
			}
		}
		slices.SortFunc(have, func(a, b netip.Addr) int { return a.Compare(b) })
		if !slices.Equal(have, want) {
			return fmt.Errorf("interface %s has addresses %v, want %v", args.IfName, have, want)
		}
		return ip.ValidateExpectedRoute(prev.Routes)
	})
	if err != nil {
		return failure(types.ErrInternal, "the pod's interface", err)
	}

	db, err := connect(c)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), ovsTimeout)
	defer cancel()
	hostName := podport.HostVethName(args.ContainerID, args.IfName)
	i, ok, err := db.Interface(ctx, hostName)
	switch {
	case err != nil:
		return failure(types.ErrTryAgainLater, "reading the pod's port", err)
	case !ok:
		return failure(types.ErrInternal, fmt.Sprintf("port %s is not on %s", hostName, c.Bridge), nil)
	case i.ExternalIDs[podport.KeyContainerID] != args.ContainerID || i.ExternalIDs[podport.KeyPodMAC] != contMAC:
		return failure(types.ErrInternal, fmt.Sprintf("port %s's external_ids do not name this container (%v)", hostName, i.ExternalIDs), nil)
	}
	book, err := openAddressBook(c, podport.NodeNetwork{})
	if err != nil {
		return failure(types.ErrIOFailure, "address store", err)
	}
	defer book.close()
	held := book.has(args.ContainerID, args.IfName)
	slices.SortFunc(held, func(a, b netip.Addr) int { return a.Compare(b) })
	if !slices.Equal(held, want) {
		return failure(types.ErrInternal, fmt.Sprintf("the address store holds %v for this container, want %v", held, want), nil)
	}
	return nil
}
