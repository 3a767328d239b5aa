package hnssim

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/switchyard-proxy/switchyard/hns"
)

// The simulator's load balancers: the calls, HNS's checks, and the
// frontends two load balancers may not share.

// EchoRewritten makes HNS answer every load balancer (created, modified,
// listed or read) through f: a what-if for fields HNS might normalise
// (nothing documents that it does), to show the driver compares only what
// HNS is known to echo.
func (s *Sim) EchoRewritten(f func(*hns.LoadBalancer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rewriteEcho = f
}

// echo is a copy of lb as HNS answers it.
func (s *Sim) echo(lb *hns.LoadBalancer) *hns.LoadBalancer {
	c := lb.Clone()
	if s.rewriteEcho != nil {
		s.rewriteEcho(c)
	}
	return c
}

// LoadBalancers implements hns.Client.
func (s *Sim) LoadBalancers() ([]hns.LoadBalancer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.call("ListLoadBalancers"); err != nil {
		return nil, err
	}
	var out []hns.LoadBalancer
	for _, lb := range s.lbs {
		out = append(out, *s.echo(lb))
	}
	slices.SortFunc(out, func(a, b hns.LoadBalancer) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// CreateLoadBalancer implements hns.Client.
func (s *Sim) CreateLoadBalancer(lb *hns.LoadBalancer) (*hns.LoadBalancer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.call("CreateLoadBalancer"); err != nil {
		return nil, err
	}
	if err := s.validate(lb, ""); err != nil {
		return nil, err
	}
	c := lb.Clone()
	c.ID = s.id("lb")
	s.putLB(c)
	return s.echo(c), nil
}

// UpdateLoadBalancer implements hns.Client (ModifyLoadBalancer).
func (s *Sim) UpdateLoadBalancer(id string, lb *hns.LoadBalancer) (*hns.LoadBalancer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.call("UpdateLoadBalancer"); err != nil {
		return nil, err
	}
	if !featuresOf(s.version).ModifyLoadBalancer {
		return nil, ErrNotImplemented
	}
	if _, ok := s.lbs[id]; !ok {
		return nil, fmt.Errorf("load balancer %s: %w", id, hns.ErrNotFound)
	}
	if err := s.validate(lb, id); err != nil {
		return nil, err
	}
	c := lb.Clone()
	c.ID = id
	if s.ignoreModifies {
		// As HNS 15.4: success, and the old load balancer stays. What 15.4
		// returns is not documented; the load balancer as asked is assumed
		// (the answer alone then cannot tell).
		return s.echo(c), nil
	}
	s.dropLB(id)
	s.putLB(c)
	return s.echo(c), nil
}

// LoadBalancer implements hns.Client.
func (s *Sim) LoadBalancer(id string) (*hns.LoadBalancer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.call("LoadBalancer"); err != nil {
		return nil, err
	}
	lb, ok := s.lbs[id]
	if !ok {
		return nil, fmt.Errorf("load balancer %s: %w", id, hns.ErrNotFound)
	}
	return s.echo(lb), nil
}

// DeleteLoadBalancer implements hns.Client.
func (s *Sim) DeleteLoadBalancer(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.call("DeleteLoadBalancer"); err != nil {
		return err
	}
	if _, ok := s.lbs[id]; !ok {
		return fmt.Errorf("load balancer %s: %w", id, hns.ErrNotFound)
	}
	s.dropLB(id)
	return nil
}

// validate checks a load balancer as HNS would; self is the ID being
// updated ("" on create).
func (s *Sim) validate(lb *hns.LoadBalancer, self string) error {
	if s.refuse != nil {
		if err := s.refuse(lb); err != nil {
			return err
		}
	}
	if len(lb.PortMappings) == 0 {
		return errors.New("load balancer has no port mapping")
	}
	if n := maxBackends(s.version); n > 0 && len(lb.HostComputeEndpoints) > n {
		return ErrTooMany
	}
	for _, id := range lb.HostComputeEndpoints {
		if _, ok := s.endpoints[id]; !ok {
			return fmt.Errorf("load balancer endpoint %s: %w", id, hns.ErrNotFound)
		}
	}
	v6 := lb.Flags&hns.LBFlagIPv6 != 0
	for _, vip := range lb.FrontendVIPs {
		ip, err := netip.ParseAddr(vip)
		if err != nil {
			return fmt.Errorf("frontend VIP %q: %v", vip, err)
		}
		if ip.Is6() != v6 {
			return fmt.Errorf("frontend VIP %s does not match the load balancer's IPv6 flag", vip)
		}
	}
	f := featuresOf(s.version)
	if v6 && !f.IPv6DualStack {
		return fmt.Errorf("IPv6 load balancers need HNS 11.10 (dual-stack); this is %d.%d", s.version.Major, s.version.Minor)
	}
	if lb.Flags&hns.LBFlagDSR != 0 && !f.DSR {
		return fmt.Errorf("DSR needs HNS 9.3-9.x or 10.2+; this is %d.%d", s.version.Major, s.version.Minor)
	}
	for _, pm := range lb.PortMappings {
		switch pm.Protocol {
		case 6, 17, 132:
		default:
			return fmt.Errorf("protocol %d is not supported", pm.Protocol)
		}
		if pm.DistributionType == hns.DistributionSourceIP && !f.SessionAffinity {
			return fmt.Errorf("session affinity needs HNS 12.0; this is %d.%d", s.version.Major, s.version.Minor)
		}
	}
	for _, k := range frontendKeys(lb) {
		if id, taken := s.frontends[k]; taken && id != self {
			return ErrPortExists
		}
	}
	return nil
}

// frontendKeys are what two load balancers may not share: each VIP (or
// none, for NodePort ones, per family: upstream programs an IPv4 and an
// IPv6 NodePort balancer on the same port) with each protocol and
// external port.
func frontendKeys(lb *hns.LoadBalancer) []string {
	vips := lb.FrontendVIPs
	if len(vips) == 0 {
		vips = []string{"any-ipv4"}
		if lb.Flags&hns.LBFlagIPv6 != 0 {
			vips = []string{"any-ipv6"}
		}
	}
	var out []string
	for _, v := range vips {
		for _, pm := range lb.PortMappings {
			out = append(out, fmt.Sprintf("%s|%d|%d", v, pm.Protocol, pm.ExternalPort))
		}
	}
	return out
}

func (s *Sim) putLB(lb *hns.LoadBalancer) {
	s.lbs[lb.ID] = lb
	for _, k := range frontendKeys(lb) {
		s.frontends[k] = lb.ID
	}
	for _, e := range lb.HostComputeEndpoints {
		s.users[e]++
	}
}

func (s *Sim) dropLB(id string) {
	if lb, ok := s.lbs[id]; ok {
		for _, k := range frontendKeys(lb) {
			delete(s.frontends, k)
		}
		for _, e := range lb.HostComputeEndpoints {
			if s.users[e]--; s.users[e] <= 0 {
				delete(s.users, e)
			}
		}
		delete(s.lbs, id)
	}
}
