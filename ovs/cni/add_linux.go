//go:build linux

package cni

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/ip"
	"github.com/containernetworking/plugins/pkg/ipam"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/switchyard-proxy/switchyard/ovs/ovsdb"
	"github.com/switchyard-proxy/switchyard/ovs/podport"
)

// addRequest is what ADD was asked, read and checked.
type addRequest struct {
	args      *skel.CmdArgs
	conf      *NetConf
	pod       PodArgs
	requested []netip.Addr
	node      podport.NodeNetwork
	hostName  string // the veth's host end, and the bridge port's name
}

// Add attaches a container: veth, addresses, routes, bridge port; then
// waits for switchyard to program the port. Anything done is undone when a
// later step fails.
func Add(args *skel.CmdArgs) (err error) {
	req, err := readAddRequest(args)
	if err != nil {
		return err
	}
	netns, err := ns.GetNS(args.Netns)
	if err != nil {
		return failure(types.ErrInvalidNetNS, fmt.Sprintf("network namespace %q", args.Netns), err)
	}
	defer netns.Close()
	db, err := openBridge(req.conf)
	if err != nil {
		return err
	}
	defer db.Close()
	book, err := openAddressBook(req.conf, req.node)
	if err != nil {
		return failure(types.ErrIOFailure, "address store", err)
	}
	defer book.close()
	ipcs, err := book.allocate(args.ContainerID, args.IfName, req.requested)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil { // undo, keeping the first error
			ctx, cancel := context.WithTimeout(context.Background(), ovsTimeout)
			_ = db.DeletePort(ctx, req.conf.Bridge, req.hostName)
			cancel()
			_ = ip.DelLinkByName(req.hostName)
			_ = book.release(args.ContainerID, args.IfName)
		}
	}()
	res, contMAC, err := setUpInterfaces(req, netns, ipcs)
	if err != nil {
		return err
	}
	if err = plugPort(db, req, ipcs, contMAC); err != nil {
		return err
	}
	return types.PrintResult(res, req.conf.CNIVersion)
}

// readAddRequest reads the configuration, CNI_ARGS and the node file.
func readAddRequest(args *skel.CmdArgs) (*addRequest, error) {
	c, err := ParseNetConf(args.StdinData)
	if err != nil {
		return nil, failure(types.ErrInvalidNetworkConfig, "bad network configuration", err)
	}
	pod, err := ParsePodArgs(args.Args)
	if err != nil {
		return nil, failure(types.ErrInvalidEnvironmentVariables, "bad CNI_ARGS", err)
	}
	requested, err := requestedIPs(c, pod)
	if err != nil {
		return nil, failure(types.ErrInvalidEnvironmentVariables, "bad requested IP", err)
	}
	node, err := podport.ReadNodeNetwork(c.NodeFile)
	if err != nil {
		return nil, failure(types.ErrTryAgainLater, "no node network", err)
	}
	if len(node.PodCIDRs) == 0 {
		return nil, failure(types.ErrTryAgainLater, fmt.Sprintf("node %s has no pod CIDR yet (its spec.podCIDRs is empty: does kube-controller-manager run with --allocate-node-cidrs?)", node.Node), nil)
	}
	return &addRequest{args: args, conf: c, pod: pod, requested: requested, node: node,
		hostName: podport.HostVethName(args.ContainerID, args.IfName)}, nil
}

// openBridge connects to OVSDB and checks that switchyard's bridge is
// there.
func openBridge(c *NetConf) (*ovsdb.Client, error) {
	db, err := connect(c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), ovsTimeout)
	defer cancel()
	ok, err := db.BridgeExists(ctx, c.Bridge)
	switch {
	case err != nil:
		err = failure(types.ErrTryAgainLater, "reading the bridge", err)
	case !ok:
		err = failure(types.ErrTryAgainLater, fmt.Sprintf("bridge %s does not exist (switchyard creates it when it starts)", c.Bridge), nil)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// setUpInterfaces makes the veth, configures the pod's end (addresses,
// default routes, no DAD, checksums) and quiets the host's end. It returns
// the result and the pod's MAC.
func setUpInterfaces(req *addRequest, netns ns.NetNS, ipcs []*current.IPConfig) (*current.Result, string, error) {
	res := &current.Result{CNIVersion: current.ImplementedSpecVersion, DNS: req.conf.DNS}
	var contMAC string
	err := netns.Do(func(hostNS ns.NetNS) error {
		ifName := req.args.IfName
		hostIf, contIf, err := ip.SetupVethWithName(ifName, req.hostName, req.node.MTU, "", hostNS)
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
		if err := noDAD(ifName); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if !req.node.TxChecksumOffload {
			if err := txChecksumOff(ifName); err != nil {
				return err
			}
		}
		return ipam.ConfigureIface(ifName, res)
	})
	if err != nil {
		return nil, "", failure(types.ErrInternal, "setting up the pod's interface", err)
	}
	if err := hostEndQuiet(req.hostName); err != nil {
		return nil, "", failure(types.ErrInternal, "setting up the host's end", err)
	}
	if !req.node.TxChecksumOffload {
		if err := txChecksumOff(req.hostName); err != nil {
			return nil, "", failure(types.ErrInternal, "setting up the host's end", err)
		}
	}
	return res, contMAC, nil
}

// plugPort adds the host's end to the bridge, its external_ids naming the
// pod (podport's keys), and waits for switchyard to program it.
func plugPort(db *ovsdb.Client, req *addRequest, ipcs []*current.IPConfig, contMAC string) error {
	var ips []string
	for _, ipc := range ipcs {
		ips = append(ips, ipc.Address.IP.String())
	}
	ids := map[string]string{
		podport.KeyPodIPs: strings.Join(ips, ","), podport.KeyPodMAC: contMAC,
		podport.KeyContainerID: req.args.ContainerID, podport.KeyIfName: req.args.IfName,
	}
	if p := req.pod.Pod(); p != "" {
		ids[podport.KeyPodName] = p
	}
	ctx, cancel := context.WithTimeout(context.Background(), ovsTimeout)
	defer cancel()
	if err := db.AddPort(ctx, req.conf.Bridge, ovsdb.PortSpec{Name: req.hostName, ExternalIDs: ids}); err != nil {
		return failure(types.ErrTryAgainLater, "adding the pod's port to "+req.conf.Bridge, err)
	}
	return waitProgrammed(db, req.hostName)
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
