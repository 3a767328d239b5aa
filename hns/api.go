package hns

import (
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"strings"
)

// The types below mirror hcsshim/hcn's, field for field and JSON tag for
// JSON tag (hcsshim v0.13.0), so the Windows client converts with a JSON
// round trip and `switchyard render --dataplane hns` prints HNS's own
// schema.

// LoadBalancer is an HNS load balancer (hcn.HostComputeLoadBalancer).
type LoadBalancer struct {
	ID                   string        `json:"ID,omitempty"`
	HostComputeEndpoints []string      `json:",omitempty"`
	SourceVIP            string        `json:",omitempty"`
	FrontendVIPs         []string      `json:",omitempty"`
	PortMappings         []PortMapping `json:",omitempty"`
	SchemaVersion        SchemaVersion `json:",omitempty"`
	Flags                uint32        `json:",omitempty"`
}

// Clone copies a load balancer, its lists too.
func (lb *LoadBalancer) Clone() *LoadBalancer {
	c := *lb
	c.HostComputeEndpoints = slices.Clone(lb.HostComputeEndpoints)
	c.FrontendVIPs = slices.Clone(lb.FrontendVIPs)
	c.PortMappings = slices.Clone(lb.PortMappings)
	return &c
}

// PortMapping is hcn.LoadBalancerPortMapping.
type PortMapping struct {
	Protocol         uint32 `json:",omitempty"` // 6 TCP, 17 UDP, 132 SCTP
	InternalPort     uint16 `json:",omitempty"`
	ExternalPort     uint16 `json:",omitempty"`
	DistributionType uint32 `json:",omitempty"`
	Flags            uint32 `json:",omitempty"`
}

// SchemaVersion is hcn.SchemaVersion.
type SchemaVersion struct {
	Major int `json:",omitempty"`
	Minor int `json:",omitempty"`
}

// V2 is the schema version the driver writes.
var V2 = SchemaVersion{Major: 2, Minor: 0}

// Load balancer flags (hcn.LoadBalancerFlags).
const (
	LBFlagDSR  uint32 = 1
	LBFlagIPv6 uint32 = 2
)

// Port mapping flags (hcn.LoadBalancerPortMappingFlags); VipExternalIP is
// kube-proxy's own constant, not hcn's.
const (
	PortFlagILB            uint32 = 1
	PortFlagLocalRoutedVIP uint32 = 2
	PortFlagUseMux         uint32 = 4
	PortFlagPreserveDIP    uint32 = 8
	PortFlagVipExternalIP  uint32 = 16
)

// Distribution types (hcn.LoadBalancerDistribution).
const (
	DistributionNone             uint32 = 0
	DistributionSourceIPProtocol uint32 = 1
	DistributionSourceIP         uint32 = 2
)

// Endpoint is an HNS endpoint (hcn.HostComputeEndpoint), reduced to the
// fields the driver reads or writes.
type Endpoint struct {
	ID                 string           `json:"ID,omitempty"`
	Name               string           `json:",omitempty"`
	HostComputeNetwork string           `json:",omitempty"`
	Policies           []EndpointPolicy `json:",omitempty"`
	IPConfigurations   []IPConfig       `json:"IpConfigurations,omitempty"`
	MacAddress         string           `json:",omitempty"`
	Flags              uint32           `json:",omitempty"`
	SchemaVersion      SchemaVersion    `json:",omitempty"`
}

// IP is the endpoint's first address ("" if it has none).
func (ep *Endpoint) IP() string {
	if len(ep.IPConfigurations) == 0 {
		return ""
	}
	return ep.IPConfigurations[0].IPAddress
}

// ProviderAddress is the address of its ProviderAddress policy ("" if it
// has none).
func (ep *Endpoint) ProviderAddress() string {
	for _, p := range ep.Policies {
		if p.Type != providerAddressPolicyType {
			continue
		}
		var s ProviderAddressSettings
		if json.Unmarshal(p.Settings, &s) == nil {
			return s.ProviderAddress
		}
	}
	return ""
}

// EndpointFlagRemote marks an endpoint on another host.
const EndpointFlagRemote uint32 = 1

// EndpointPolicy is hcn.EndpointPolicy; Settings is raw JSON.
type EndpointPolicy struct {
	Type     string      `json:",omitempty"`
	Settings rawSettings `json:",omitempty"`
}

// IPConfig is hcn.IpConfig.
type IPConfig struct {
	IPAddress    string `json:"IpAddress,omitempty"`
	PrefixLength uint8  `json:",omitempty"`
}

// ProviderAddressSettings is hcn.ProviderAddressEndpointPolicySetting.
type ProviderAddressSettings struct {
	ProviderAddress string `json:",omitempty"`
}

// Network is what the driver needs of an HNS network.
type Network struct {
	ID   string
	Name string
	Type string // "L2Bridge", "Overlay", ...
	// RemoteSubnets maps other nodes' pod prefixes to their provider
	// addresses (overlay: the remote node's IP), from the network's
	// RemoteSubnetRoute policies.
	RemoteSubnets []RemoteSubnet
}

// RemoteSubnet is one RemoteSubnetRoute policy of an overlay network.
type RemoteSubnet struct {
	DestinationPrefix string
	ProviderAddress   string
}

// IsOverlay reports whether remote endpoints need provider addresses. The
// type is compared ignoring case, as upstream's winkernel isOverlay does.
func (n *Network) IsOverlay() bool { return strings.EqualFold(n.Type, "Overlay") }

// Features is what this HNS supports (hcn.SupportedFeatures, reduced),
// and its version (hcn.GetGlobals).
type Features struct {
	DSR             bool
	SessionAffinity bool
	IPv6DualStack   bool
	// ModifyLoadBalancer is hcsshim's answer: HNS 15.4 and later. The
	// driver modifies in place only from 15.5 (ModifyApplies).
	ModifyLoadBalancer bool
	Version            Version
}

// Version is the HNS service's version.
type Version struct{ Major, Minor int }

// AtLeast reports whether v is major.minor or later.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || v.Major == major && v.Minor >= minor
}

// ModifyApplies reports whether an in-place ModifyLoadBalancer takes
// effect: from HNS 15.5. On 15.4, which hcsshim allows it on, the call
// succeeds and the load balancer keeps its old endpoints
// (kubernetes/kubernetes#131466); upstream allows it from 15.5 since
// kubernetes/kubernetes#131506, through hnslib's hcnglobals.go.
func (f Features) ModifyApplies() bool {
	return f.ModifyLoadBalancer && f.Version.AtLeast(15, 5)
}

// Client is the narrow interface over HNS the driver uses. The Windows
// implementation calls hcn; hnssim is an in-memory HNS for tests.
type Client interface {
	Network(name string) (*Network, error)
	Endpoints(networkID string) ([]Endpoint, error)
	CreateEndpoint(networkID string, ep *Endpoint) (*Endpoint, error)
	DeleteEndpoint(id string) error
	LoadBalancers() ([]LoadBalancer, error)
	CreateLoadBalancer(lb *LoadBalancer) (*LoadBalancer, error)
	UpdateLoadBalancer(id string, lb *LoadBalancer) (*LoadBalancer, error)
	// LoadBalancer reads one load balancer back (to check a modify).
	LoadBalancer(id string) (*LoadBalancer, error)
	DeleteLoadBalancer(id string) error
	Features() (Features, error)
	// HostMAC is the MAC address of the host interface that has ip (the
	// node IP): overlay networks need it for the endpoints of the
	// ClusterIPs and the source VIP, as upstream finds it (net.Interfaces).
	HostMAC(ip netip.Addr) (string, error)
}

// Errors a Client wraps so the driver can tell them apart (the Windows
// client maps hcn's error codes to them; the simulator returns them).
var (
	// ErrNotFound: the object does not exist.
	ErrNotFound = errors.New("HNS object not found")
	// ErrFrontendInUse: another load balancer holds the VIP, port and
	// protocol (HCN_E_PORT_ALREADY_EXISTS, 0x803b0013).
	ErrFrontendInUse = errors.New("HNS frontend already in use")
	// ErrNotImplemented: this HNS lacks the call (E_NOTIMPL, 0x80004001),
	// as ModifyLoadBalancer before Windows Server 2025.
	ErrNotImplemented = errors.New("HNS call not implemented")
	// ErrTooManyEndpoints: more endpoints than this HNS takes in a load
	// balancer. Which code HNS uses for it is not documented; the driver
	// also treats a refusal it would repeat (E_INVALIDARG) of a load
	// balancer with more than MaxBackends endpoints as this (refusedSize).
	ErrTooManyEndpoints = errors.New("HNS load balancer has too many endpoints")
)
