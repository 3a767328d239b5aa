// Package hnssim is an in-memory HNS for tests on Linux: networks, endpoints
// and load balancers with the checks HNS applies (as documented and as
// upstream kube-proxy has met them), features gated by the HNS version it
// reports (versions.go), call counting, fault injection, and a packet
// evaluator (eval.go).
//
// It is a model, not Windows. It models: object lifetimes that outlive a
// driver (restart tests), duplicate frontends failing like HRESULT
// 0x803b0013, the 64-backend limit before HNS 12.0 (kubernetes#98680; none
// later, assumed), DSR, dual-stack, session affinity and ModifyLoadBalancer
// by HNS version (hcsshim's lines; which Windows build has which version
// is unverified), ModifyLoadBalancer on HNS 15.4 succeeding without taking
// effect (kubernetes/kubernetes#131466), remote endpoints needing a
// provider address on overlay, the host's MAC (one interface), remote
// subnet routes that change, and an HNS restart window in which calls
// fail. It does not model: VFP rule ordering, ACLs, host routing, packet
// rewriting beyond the load balancer decision, timing, or error codes it
// has no source for (those return descriptive errors instead).
package hnssim

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/switchyard-proxy/switchyard/hns"
)

// Errors HNS returns (texts as HNS words them where known).
var (
	ErrPortExists     = fmt.Errorf("HNS failed with error 0x803b0013: The specified port already exists: %w", hns.ErrFrontendInUse)
	ErrNotImplemented = fmt.Errorf("HNS failed with error 0x80004001: Not implemented: %w", hns.ErrNotImplemented)
	ErrUnavailable    = errors.New("HNS failed with error 0x800706ba: The RPC server is unavailable")
	// The 64-backend limit is documented; the code HNS returns for it is not.
	ErrTooMany = fmt.Errorf("HNS rejected the load balancer: more than 64 backends: %w", hns.ErrTooManyEndpoints)
)

// Sim is the simulated HNS. It implements hns.Client.
type Sim struct {
	mu        sync.Mutex
	build     Build
	networks  map[string]*hns.Network
	endpoints map[string]*hns.Endpoint
	byIP      map[string]string // network ID + "|" + IP -> endpoint ID
	lbs       map[string]*hns.LoadBalancer
	frontends map[string]string // frontendKeys -> load balancer ID
	users     map[string]int    // endpoint ID -> load balancers using it
	hostIPs   []netip.Addr
	next      int
	calls     map[string]int
	faults    map[string][]error
	// refuse, when set, fails creating or modifying the load balancers
	// it returns an error for (a fault kept to some Services).
	refuse  func(*hns.LoadBalancer) error
	down    int // calls still failing after a restart
	version hns.Version
	// ignoreModifies: ModifyLoadBalancer succeeds and changes nothing.
	ignoreModifies bool
	hostMAC        string
	// rewriteEcho, when set, changes every load balancer HNS answers with
	// (a what-if: see EchoRewritten).
	rewriteEcho func(*hns.LoadBalancer)
}

// SetVersion makes the simulated HNS report version v. On 15.4,
// ModifyLoadBalancer is accepted and not applied, as kubernetes#131466
// found.
func (s *Sim) SetVersion(v hns.Version) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = v
	s.ignoreModifies = v == hns.Version{Major: 15, Minor: 4}
}

// IgnoreModifies makes ModifyLoadBalancer succeed without taking effect
// whatever the version: an HNS that misbehaves as 15.4 did while
// reporting a version the driver trusts (to test that the driver reads a
// modified load balancer back).
func (s *Sim) IgnoreModifies() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ignoreModifies = true
}

var _ hns.Client = (*Sim)(nil)

// New returns an empty HNS of a Windows build.
func New(b Build) *Sim {
	return &Sim{build: b, version: versionOf(b), hostMAC: "00:15:5d:00:00:01", networks: map[string]*hns.Network{}, endpoints: map[string]*hns.Endpoint{}, byIP: map[string]string{},
		lbs: map[string]*hns.LoadBalancer{}, frontends: map[string]string{}, users: map[string]int{}, calls: map[string]int{}, faults: map[string][]error{}}
}

func (s *Sim) id(kind string) string {
	s.next++
	return fmt.Sprintf("%s-%08d-0000-0000-0000-%012d", kind, s.next, s.next)
}

// AddNetwork creates a network (type "L2Bridge" or "Overlay").
func (s *Sim) AddNetwork(name, typ string, remote ...hns.RemoteSubnet) *hns.Network {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := &hns.Network{ID: s.id("net"), Name: name, Type: typ, RemoteSubnets: remote}
	s.networks[name] = n
	return n
}

// SetRemoteSubnets replaces an overlay network's remote subnet routes (a
// node joining or leaving, as the CNI would write them).
func (s *Sim) SetRemoteSubnets(network string, remote ...hns.RemoteSubnet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.networks[network].RemoteSubnets = slices.Clone(remote)
}

// HostMAC implements hns.Client: the host has one interface, holding every
// address AddHostIP gave it.
func (s *Sim) HostMAC(ip netip.Addr) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.hostIPs, ip) {
		return "", fmt.Errorf("no host interface has %s", ip)
	}
	return s.hostMAC, nil
}

// AddHostIP gives the host an address (NodePort frontends answer on it).
func (s *Sim) AddHostIP(ip netip.Addr) {
	s.mu.Lock()
	s.hostIPs = append(s.hostIPs, ip)
	s.mu.Unlock()
}

// AddLocalEndpoint creates a pod's endpoint as a CNI would.
func (s *Sim) AddLocalEndpoint(network, name, ip string) *hns.Endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.networks[network]
	ep := &hns.Endpoint{ID: s.id("ep"), Name: name, HostComputeNetwork: n.ID,
		IPConfigurations: []hns.IPConfig{{IPAddress: ip}}, SchemaVersion: hns.V2}
	s.store(ep)
	return clone(ep)
}

// RemoveEndpointByIP deletes an endpoint as a CNI would (pod gone).
func (s *Sim) RemoveEndpointByIP(ip string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, ep := range s.endpoints {
		if ep.IP() == ip {
			s.drop(id)
		}
	}
}

// Calls returns how many times each operation was called.
func (s *Sim) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// ResetCalls zeroes the counters.
func (s *Sim) ResetCalls() {
	s.mu.Lock()
	s.calls = map[string]int{}
	s.mu.Unlock()
}

// FailNext makes the next n calls of op fail with err.
func (s *Sim) FailNext(op string, err error, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[op] = append(s.faults[op], err)
	}
}

// RefuseWhile makes creating or modifying a load balancer fail with what
// refuse returns for it, until RefuseWhile(nil).
func (s *Sim) RefuseWhile(refuse func(*hns.LoadBalancer) error) {
	s.mu.Lock()
	s.refuse = refuse
	s.mu.Unlock()
}

// Restart simulates the HNS service restarting: objects persist (HNS
// keeps them in its store), and the next n calls of any kind fail.
func (s *Sim) Restart(n int) {
	s.mu.Lock()
	s.down = n
	s.mu.Unlock()
}

// LoadBalancerCount is how many load balancers HNS holds.
func (s *Sim) LoadBalancerCount() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.lbs) }

// call counts an operation and returns an injected error, if any.
func (s *Sim) call(op string) error {
	s.calls[op]++
	if s.down > 0 {
		s.down--
		return ErrUnavailable
	}
	if q := s.faults[op]; len(q) > 0 {
		s.faults[op] = q[1:]
		return q[0]
	}
	return nil
}

// Features implements hns.Client.
func (s *Sim) Features() (hns.Features, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.call("Features"); err != nil {
		return hns.Features{}, err
	}
	return featuresOf(s.version), nil
}

// Network implements hns.Client.
func (s *Sim) Network(name string) (*hns.Network, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.call("Network"); err != nil {
		return nil, err
	}
	n, ok := s.networks[name]
	if !ok {
		return nil, fmt.Errorf("network %q: %w", name, hns.ErrNotFound)
	}
	c := *n
	c.RemoteSubnets = slices.Clone(n.RemoteSubnets)
	return &c, nil
}

// Endpoints implements hns.Client.
func (s *Sim) Endpoints(networkID string) ([]hns.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.call("ListEndpoints"); err != nil {
		return nil, err
	}
	var out []hns.Endpoint
	for _, ep := range s.endpoints {
		if ep.HostComputeNetwork == networkID {
			out = append(out, *clone(ep))
		}
	}
	slices.SortFunc(out, func(a, b hns.Endpoint) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// CreateEndpoint implements hns.Client (remote endpoints).
func (s *Sim) CreateEndpoint(networkID string, ep *hns.Endpoint) (*hns.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.call("CreateEndpoint"); err != nil {
		return nil, err
	}
	var net *hns.Network
	for _, n := range s.networks {
		if n.ID == networkID {
			net = n
		}
	}
	if net == nil {
		return nil, fmt.Errorf("network %s: %w", networkID, hns.ErrNotFound)
	}
	ip := ep.IP()
	if _, err := netip.ParseAddr(ip); err != nil {
		return nil, fmt.Errorf("endpoint IP %q: %v", ip, err)
	}
	if _, dup := s.byIP[networkID+"|"+ip]; dup {
		return nil, fmt.Errorf("an endpoint with IP %s already exists (the code HNS returns is not modelled)", ip)
	}
	if net.IsOverlay() && ep.Flags&hns.EndpointFlagRemote != 0 && ep.ProviderAddress() == "" {
		return nil, fmt.Errorf("remote endpoint %s on overlay network %s has no ProviderAddress policy", ip, net.Name)
	}
	c := clone(ep)
	c.ID = s.id("ep")
	c.HostComputeNetwork = networkID
	s.store(c)
	return clone(c), nil
}

// DeleteEndpoint implements hns.Client. An endpoint a load balancer still
// uses cannot be deleted.
func (s *Sim) DeleteEndpoint(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.call("DeleteEndpoint"); err != nil {
		return err
	}
	if _, ok := s.endpoints[id]; !ok {
		return fmt.Errorf("endpoint %s: %w", id, hns.ErrNotFound)
	}
	if n := s.users[id]; n > 0 {
		return fmt.Errorf("endpoint %s is used by %d load balancer(s) (the code HNS returns is not modelled)", id, n)
	}
	s.drop(id)
	return nil
}

func (s *Sim) store(ep *hns.Endpoint) {
	s.endpoints[ep.ID] = ep
	s.byIP[ep.HostComputeNetwork+"|"+ep.IP()] = ep.ID
}

func (s *Sim) drop(id string) {
	if ep, ok := s.endpoints[id]; ok {
		delete(s.byIP, ep.HostComputeNetwork+"|"+ep.IP())
		delete(s.endpoints, id)
	}
}

func clone(ep *hns.Endpoint) *hns.Endpoint {
	c := *ep
	c.Policies = slices.Clone(ep.Policies)
	c.IPConfigurations = slices.Clone(ep.IPConfigurations)
	return &c
}
