//go:build linux

package cni

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/containernetworking/plugins/pkg/utils/sysctl"
	"github.com/safchain/ethtool"
	"github.com/vishvananda/netlink"
)

// hostEndQuiet keeps the host's own stack off a veth's host end: no ARP
// answers, no IPv6 (no link-local address, no neighbour discovery). The
// end is a bridge port; with the userspace datapath, which reads it as a
// raw socket, the host would otherwise answer and route what the pod
// sends as well.
func hostEndQuiet(dev string) error {
	l, err := netlink.LinkByName(dev)
	if err != nil {
		return err
	}
	if err := netlink.LinkSetARPOff(l); err != nil {
		return fmt.Errorf("%s: arp off: %w", dev, err)
	}
	if _, err := sysctl.Sysctl(fmt.Sprintf("net/ipv6/conf/%s/disable_ipv6", dev), "1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: disabling IPv6: %w", dev, err)
	}
	return nil
}

// txChecksumOff turns off every tx-checksum-* feature of a device in the
// current network namespace (what `ethtool -K DEV tx off` does).
func txChecksumOff(dev string) error {
	e, err := ethtool.NewEthtool()
	if err != nil {
		return err
	}
	defer e.Close()
	names, err := e.FeatureNames(dev)
	if err != nil {
		return fmt.Errorf("%s: reading offload features: %w", dev, err)
	}
	off := map[string]bool{}
	for n := range names {
		if strings.HasPrefix(n, "tx-checksum-") {
			off[n] = false
		}
	}
	if err := e.Change(dev, off); err != nil {
		return fmt.Errorf("%s: turning TX checksum offload off: %w", dev, err)
	}
	return nil
}

// noDAD turns off IPv6 duplicate address detection on a pod's interface:
// the addresses come from the node's allocator, and the bridge does not
// answer DAD probes, so DAD would only delay the pod by a second.
func noDAD(dev string) error {
	_, err := sysctl.Sysctl(fmt.Sprintf("net/ipv6/conf/%s/accept_dad", dev), "0")
	return err
}
