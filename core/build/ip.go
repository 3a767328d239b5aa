package build

import (
	"fmt"
	"net/netip"
	"strings"

	utilnet "k8s.io/utils/net"
)

// parseIP reads an IP the way kube-proxy does (ParseIPSloppy: IPv4 octets
// with leading zeros are read as decimal), returning it unmapped.
func parseIP(s string) (netip.Addr, error) {
	if ip, err := netip.ParseAddr(s); err == nil && ip.Zone() == "" {
		return ip.Unmap(), nil
	}
	if ip := utilnet.ParseIPSloppy(s); ip != nil {
		if a, ok := netip.AddrFromSlice(ip); ok {
			return a.Unmap(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("%q is not an IP address", s)
}

// parseCIDR reads a CIDR (whitespace-trimmed, as upstream tolerates) and
// returns its masked prefix.
func parseCIDR(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if p, err := netip.ParsePrefix(s); err == nil {
		return netip.PrefixFrom(p.Addr().Unmap(), unmappedBits(p)).Masked(), nil
	}
	if _, n, err := utilnet.ParseCIDRSloppy(s); err == nil {
		a, ok := netip.AddrFromSlice(n.IP)
		ones, _ := n.Mask.Size()
		if ok {
			a = a.Unmap()
			return netip.PrefixFrom(a, ones).Masked(), nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("%q is not a CIDR", s)
}

func unmappedBits(p netip.Prefix) int {
	if p.Addr().Is4In6() {
		if b := p.Bits() - 96; b >= 0 {
			return b
		}
		return 0
	}
	return p.Bits()
}

// forbiddenEndpointIP says why an address may not be an endpoint, mirroring
// the API server's EndpointSlice validation (a file source skips it).
func forbiddenEndpointIP(ip netip.Addr) string {
	switch {
	case ip.IsUnspecified():
		return "unspecified address"
	case ip.IsLoopback():
		return "loopback address"
	case ip.IsLinkLocalUnicast():
		return "link-local address"
	case ip.IsLinkLocalMulticast():
		return "link-local multicast address"
	case ip.IsMulticast():
		return "multicast address"
	}
	return ""
}
