package hostnet

import (
	"fmt"
	"os"
	"strings"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// sysctls turns on forwarding for the families with pods (a node without
// IPv6 pods keeps its IPv6 forwarding as it is). IPv6 forwarding first
// keeps the router advertisements the node takes its routes from
// (keepRouterAdvertisements).
func (h *Host) sysctls(c Config) error {
	return h.inNS(func() error {
		fams := c.Families()
		if fams.Has(graph.IPv4) {
			if err := setSysctl("net/ipv4/ip_forward", "1"); err != nil {
				return err
			}
		}
		if fams.Has(graph.IPv6) {
			if err := h.keepRouterAdvertisements(); err != nil {
				return err
			}
			if err := setSysctl("net/ipv6/conf/all/forwarding", "1"); err != nil {
				return err
			}
		}
		return nil
	})
}

// keepRouterAdvertisements: with IPv6 forwarding on, Linux ignores router
// advertisements on an interface whose accept_ra is 1, and a node that
// takes its IPv6 default route from them loses it when the route expires.
// Each interface holding a route learned from one (protocol ra) with
// accept_ra 1 gets accept_ra 2: take them even when forwarding. Every other
// interface is left as it is (the gateway and pods' ports above all: a pod
// must never be able to route the node), and so is the default for new
// interfaces. Runs in the host's namespace (inNS).
func (h *Host) keepRouterAdvertisements() error {
	routes, err := h.nl.RouteListFiltered(netlink.FAMILY_V6, &netlink.Route{Protocol: unix.RTPROT_RA}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return fmt.Errorf("listing routes from router advertisements: %w", err)
	}
	seen := map[int]bool{}
	for _, r := range routes {
		if seen[r.LinkIndex] {
			continue
		}
		seen[r.LinkIndex] = true
		link, err := h.nl.LinkByIndex(r.LinkIndex)
		if err != nil {
			continue // gone meanwhile
		}
		name := link.Attrs().Name
		key := "net/ipv6/conf/" + name + "/accept_ra"
		if old, err := os.ReadFile("/proc/sys/" + key); err != nil || strings.TrimSpace(string(old)) != "1" {
			continue
		}
		klog.InfoS("IPv6 forwarding goes on: keeping the router advertisements this interface takes its routes from (accept_ra 1 -> 2)", "interface", name)
		if err := setSysctl(key, "2"); err != nil {
			return err
		}
	}
	return nil
}

func setSysctl(name, value string) error {
	path := "/proc/sys/" + name
	if old, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(old)) == value {
		return nil
	}
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("sysctl %s=%s: %w", strings.ReplaceAll(name, "/", "."), value, err)
	}
	return nil
}
