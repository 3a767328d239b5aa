package hns

import (
	"fmt"
	"net/netip"
	"strings"
)

// The HNS endpoints the driver makes itself (the rest of the mapping is
// mapping.go): remote endpoints for backends on other nodes, a remote
// endpoint per ClusterIP on overlay networks, and the source VIP's.

// RemoteEndpointName names the remote endpoints this driver creates; the
// prefix is how it recognises its own after a restart.
func RemoteEndpointName(ip netip.Addr) string {
	return RemotePrefix + strings.ReplaceAll(ip.String(), ":", "-")
}

// RemotePrefix starts the name of every remote endpoint the driver owns.
const RemotePrefix = "switchyard-remote-"

// RemoteEndpoint builds the HNS endpoint for a backend on another node:
// on overlay networks with a ProviderAddress policy (the node that holds
// it, from the network's remote subnet routes; this node's IP if none
// matches, as upstream does), with a MAC conjured from the IP.
func RemoteEndpoint(n *Network, ip netip.Addr, nodeIP netip.Addr) *Endpoint {
	ep := &Endpoint{
		Name:             RemoteEndpointName(ip),
		IPConfigurations: []IPConfig{{IPAddress: ip.String()}},
		MacAddress:       conjureMAC(ip),
		Flags:            EndpointFlagRemote,
		SchemaVersion:    V2,
	}
	if n.IsOverlay() {
		ep.Policies = append(ep.Policies, providerAddressPolicy(ExpectedProviderAddress(n.RemoteSubnets, ip, nodeIP)))
	}
	return ep
}

// ExpectedProviderAddress is the provider address a remote endpoint for
// ip should carry: the remote subnet's that holds it, else this node's IP
// (upstream: "Could not find provider address, assuming it is a public
// IP").
func ExpectedProviderAddress(subnets []RemoteSubnet, ip, nodeIP netip.Addr) string {
	if pa := ProviderAddressFor(subnets, ip); pa != "" {
		return pa
	}
	if nodeIP.IsValid() {
		return nodeIP.String()
	}
	return ""
}

// VIPEndpointPrefix starts the name of the ClusterIP endpoints the driver
// creates on overlay networks.
const VIPEndpointPrefix = "switchyard-vip-"

// VIPEndpoint builds the remote endpoint upstream creates for a ClusterIP
// on an overlay network: the ClusterIP at this host (its MAC, and this
// node's IP as provider address).
func VIPEndpoint(vip netip.Addr, hostMAC string, nodeIP netip.Addr) *Endpoint {
	return &Endpoint{
		Name:             VIPEndpointPrefix + strings.ReplaceAll(vip.String(), ":", "-"),
		IPConfigurations: []IPConfig{{IPAddress: vip.String()}},
		MacAddress:       hostMAC,
		Flags:            EndpointFlagRemote,
		Policies:         []EndpointPolicy{providerAddressPolicy(nodeIP.String())},
		SchemaVersion:    V2,
	}
}

// SourceVIPEndpointName names the source VIP's endpoint when the driver
// creates it.
const SourceVIPEndpointName = "switchyard-source-vip"

// SourceVIPEndpoint builds the endpoint upstream creates for the source
// VIP on an overlay network when none exists: a local endpoint (no remote
// flag, so no provider address) with the host's MAC.
func SourceVIPEndpoint(ip netip.Addr, hostMAC string) *Endpoint {
	return &Endpoint{
		Name:             SourceVIPEndpointName,
		IPConfigurations: []IPConfig{{IPAddress: ip.String()}},
		MacAddress:       hostMAC,
		SchemaVersion:    V2,
	}
}

// ProviderAddressFor is the provider address of the remote subnet that
// holds ip, or of the node whose address ip is ("" if none: upstream's
// findRemoteSubnetProviderAddress).
func ProviderAddressFor(subnets []RemoteSubnet, ip netip.Addr) string {
	pa := ""
	for _, r := range subnets {
		if p, err := netip.ParsePrefix(r.DestinationPrefix); err == nil && p.Contains(ip) {
			pa = r.ProviderAddress
		}
		if r.ProviderAddress == ip.String() {
			pa = r.ProviderAddress
		}
	}
	return pa
}

// conjureMAC is upstream's "02-11-" + the address's last four bytes.
func conjureMAC(ip netip.Addr) string {
	b := ip.AsSlice()
	b = b[len(b)-4:]
	return fmt.Sprintf("02-11-%02x-%02x-%02x-%02x", b[0], b[1], b[2], b[3])
}
