//go:build linux

package cni

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/containernetworking/plugins/pkg/ip"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/switchyard-proxy/switchyard/ovs/podport"
	"github.com/vishvananda/netlink"
)

// Check verifies that what ADD made is still there: the pod's interface
// with the addresses of the previous result and its default routes, the
// bridge port with its external_ids, the allocations.
func Check(args *skel.CmdArgs) error {
	c, err := ParseNetConf(args.StdinData)
	if err != nil {
		return failure(types.ErrInvalidNetworkConfig, "bad network configuration", err)
	}
	prev, err := previousResult(c)
	if err != nil {
		return err
	}
	var want []netip.Addr
	for _, ipc := range prev.IPs {
		a, _ := netip.AddrFromSlice(ipc.Address.IP)
		want = append(want, a.Unmap())
	}
	slices.SortFunc(want, netip.Addr.Compare)
	contMAC, err := checkPodInterface(args, prev, want)
	if err != nil {
		return err
	}
	if err := checkPort(c, args, contMAC); err != nil {
		return err
	}
	return checkAllocations(c, args, want)
}

// previousResult is the result CHECK is given (prevResult).
func previousResult(c *NetConf) (*current.Result, error) {
	if c.RawPrevResult == nil {
		return nil, failure(types.ErrInvalidNetworkConfig, "CHECK needs prevResult", nil)
	}
	if err := version.ParsePrevResult(&c.PluginConf); err != nil {
		return nil, failure(types.ErrDecodingFailure, "prevResult", err)
	}
	prev, err := current.NewResultFromResult(c.PrevResult)
	if err != nil {
		return nil, failure(types.ErrDecodingFailure, "prevResult", err)
	}
	return prev, nil
}

// checkPodInterface checks the pod's interface has exactly the addresses
// want (sorted) and the previous result's routes; it returns its MAC.
func checkPodInterface(args *skel.CmdArgs, prev *current.Result, want []netip.Addr) (string, error) {
	netns, err := ns.GetNS(args.Netns)
	if err != nil {
		return "", failure(types.ErrInvalidNetNS, fmt.Sprintf("network namespace %q", args.Netns), err)
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
		slices.SortFunc(have, netip.Addr.Compare)
		if !slices.Equal(have, want) {
			return fmt.Errorf("interface %s has addresses %v, want %v", args.IfName, have, want)
		}
		return ip.ValidateExpectedRoute(prev.Routes)
	})
	if err != nil {
		return "", failure(types.ErrInternal, "the pod's interface", err)
	}
	return contMAC, nil
}

// checkPort checks the bridge port names this container and its MAC.
func checkPort(c *NetConf, args *skel.CmdArgs, contMAC string) error {
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
	return nil
}

// checkAllocations checks the address store holds exactly want for the
// container.
func checkAllocations(c *NetConf, args *skel.CmdArgs, want []netip.Addr) error {
	book, err := openAddressBook(c, podport.NodeNetwork{})
	if err != nil {
		return failure(types.ErrIOFailure, "address store", err)
	}
	defer book.close()
	held := book.has(args.ContainerID, args.IfName)
	slices.SortFunc(held, netip.Addr.Compare)
	if !slices.Equal(held, want) {
		return failure(types.ErrInternal, fmt.Sprintf("the address store holds %v for this container, want %v", held, want), nil)
	}
	return nil
}
