package dataplanes

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// ParseIPFlag reads a flag of IP addresses (a driver's --<driver>-node-ips): IP
// addresses, at most one per family, IPv4-mapped IPv6 read as IPv4. Each
// bad value is an error naming the flag.
func ParseIPFlag(flag string, values []string) ([]netip.Addr, error) {
	var out []netip.Addr
	var fams graph.FamilySet
	var errs []error
	for _, s := range values {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %q is not an IP address", flag, s))
			continue
		}
		ip = ip.Unmap()
		if fams.Has(graph.FamilyOf(ip)) {
			errs = append(errs, fmt.Errorf("--%s: more than one %s address", flag, graph.FamilyOf(ip)))
			continue
		}
		fams = fams.With(graph.FamilyOf(ip))
		out = append(out, ip)
	}
	return out, errors.Join(errs...)
}

// NodeIPs are the addresses a driver uses as the node's: the configured
// ones (a --<driver>-node-ips flag) when there are any, else the Node's.
func NodeIPs(configured []netip.Addr, n graph.Node) []netip.Addr {
	if len(configured) > 0 {
		return configured
	}
	return n.IPs
}
