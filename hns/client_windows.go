//go:build windows

package hns

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/Microsoft/hcsshim/hcn"
)

// hcnClient is the real HNS, through hcsshim's hcn package. Our types
// share hcn's JSON field names, so values convert with a JSON round trip.
type hcnClient struct{}

func platformClient() (Client, error) {
	if err := hcn.V2ApiSupported(); err != nil {
		return nil, fmt.Errorf("HNS V2 API: %w", err)
	}
	return hcnClient{}, nil
}

func convert(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// classify wraps hcn's errors the driver acts on in this package's
// sentinels.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case hcn.IsNotFoundError(err) || hcn.IsElementNotFoundError(err):
		return fmt.Errorf("%v: %w", err, ErrNotFound)
	case hcn.IsPortAlreadyExistsError(err):
		return fmt.Errorf("%v: %w", err, ErrFrontendInUse)
	case hcn.IsNotImplemented(err):
		return fmt.Errorf("%v: %w", err, ErrNotImplemented)
	}
	return err
}

func (hcnClient) Network(name string) (*Network, error) {
	n, err := hcn.GetNetworkByName(name)
	if err != nil {
		return nil, classify(err)
	}
	out := &Network{ID: n.Id, Name: n.Name, Type: string(n.Type)}
	for _, p := range n.Policies {
		if p.Type != hcn.RemoteSubnetRoute {
			continue
		}
		var s hcn.RemoteSubnetRoutePolicySetting
		if err := json.Unmarshal(p.Settings, &s); err == nil {
			out.RemoteSubnets = append(out.RemoteSubnets, RemoteSubnet{DestinationPrefix: s.DestinationPrefix, ProviderAddress: s.ProviderAddress})
		}
	}
	return out, nil
}

func (hcnClient) Endpoints(networkID string) ([]Endpoint, error) {
	eps, err := hcn.ListEndpointsOfNetwork(networkID)
	if err != nil {
		return nil, err
	}
	var out []Endpoint
	if err := convert(eps, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (hcnClient) CreateEndpoint(networkID string, ep *Endpoint) (*Endpoint, error) {
	var h hcn.HostComputeEndpoint
	if err := convert(ep, &h); err != nil {
		return nil, err
	}
	h.HostComputeNetwork = networkID
	created, err := h.Create()
	if err != nil {
		return nil, classify(err)
	}
	var out Endpoint
	return &out, convert(created, &out)
}

func (hcnClient) DeleteEndpoint(id string) error {
	ep, err := hcn.GetEndpointByID(id)
	if err != nil {
		return classify(err)
	}
	return classify(ep.Delete())
}

func (hcnClient) LoadBalancers() ([]LoadBalancer, error) {
	lbs, err := hcn.ListLoadBalancers()
	if err != nil {
		return nil, err
	}
	var out []LoadBalancer
	return out, convert(lbs, &out)
}

func (hcnClient) CreateLoadBalancer(lb *LoadBalancer) (*LoadBalancer, error) {
	var h hcn.HostComputeLoadBalancer
	if err := convert(lb, &h); err != nil {
		return nil, err
	}
	created, err := h.Create()
	if err != nil {
		return nil, classify(err)
	}
	var out LoadBalancer
	return &out, convert(created, &out)
}

func (hcnClient) UpdateLoadBalancer(id string, lb *LoadBalancer) (*LoadBalancer, error) {
	var h hcn.HostComputeLoadBalancer
	if err := convert(lb, &h); err != nil {
		return nil, err
	}
	updated, err := h.Update(id)
	if err != nil {
		return nil, classify(err)
	}
	var out LoadBalancer
	return &out, convert(updated, &out)
}

func (hcnClient) DeleteLoadBalancer(id string) error {
	lb, err := hcn.GetLoadBalancerByID(id)
	if err != nil {
		var nf hcn.LoadBalancerNotFoundError
		if errors.As(err, &nf) {
			return fmt.Errorf("%v: %w", err, ErrNotFound)
		}
		return classify(err)
	}
	return classify(lb.Delete())
}

func (hcnClient) Features() (Features, error) {
	f, err := hcn.GetCachedSupportedFeatures()
	if err != nil {
		return Features{}, err
	}
	g, err := hcn.GetGlobals()
	if err != nil {
		return Features{}, err
	}
	return Features{DSR: f.DSR, SessionAffinity: f.SessionAffinity, IPv6DualStack: f.IPv6DualStack, ModifyLoadBalancer: f.ModifyLoadbalancer,
		Version: Version{Major: g.Version.Major, Minor: g.Version.Minor}}, nil
}

func (hcnClient) LoadBalancer(id string) (*LoadBalancer, error) {
	lb, err := hcn.GetLoadBalancerByID(id)
	if err != nil {
		var nf hcn.LoadBalancerNotFoundError
		if errors.As(err, &nf) {
			return nil, fmt.Errorf("%v: %w", err, ErrNotFound)
		}
		return nil, classify(err)
	}
	var out LoadBalancer
	return &out, convert(lb, &out)
}

// HostMAC finds the interface that has ip, as upstream winkernel does.
func (hcnClient) HostMAC(ip netip.Addr) (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, iface := range ifaces {
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == ip {
				return iface.HardwareAddr.String(), nil
			}
		}
	}
	return "", fmt.Errorf("no host interface has %s", ip)
}
