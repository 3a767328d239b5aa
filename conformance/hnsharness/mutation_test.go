package hnsharness

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/hns"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
)

// mutatingClient hands HNS load balancers and endpoints changed by a
// mutation, and answers the driver's reads with what the driver asked
// for: the driver sees no difference, as a driver that computed the
// mutated objects itself would not.
type mutatingClient struct {
	hns.Client
	lb func(*hns.LoadBalancer)
	ep func(*hns.Endpoint)

	mu       sync.Mutex
	askedLBs map[string]hns.LoadBalancer
	askedEPs map[string]hns.Endpoint
}

func mutating(lb func(*hns.LoadBalancer), ep func(*hns.Endpoint)) func(hns.Client) hns.Client {
	return func(c hns.Client) hns.Client {
		return &mutatingClient{Client: c, lb: lb, ep: ep, askedLBs: map[string]hns.LoadBalancer{}, askedEPs: map[string]hns.Endpoint{}}
	}
}

func cloneEP(ep *hns.Endpoint) *hns.Endpoint {
	c := *ep
	c.Policies = slices.Clone(ep.Policies)
	c.IPConfigurations = slices.Clone(ep.IPConfigurations)
	return &c
}

// sent mutates a load balancer on its way to HNS, and remembers what was
// asked once HNS has given it an ID.
func (m *mutatingClient) sent(asked *hns.LoadBalancer, call func(*hns.LoadBalancer) (*hns.LoadBalancer, error)) (*hns.LoadBalancer, error) {
	mutated := asked.Clone()
	if m.lb != nil {
		m.lb(mutated)
	}
	got, err := call(mutated)
	if err != nil {
		return nil, err
	}
	answer := asked.Clone()
	answer.ID = got.ID
	m.mu.Lock()
	m.askedLBs[got.ID] = *answer.Clone()
	m.mu.Unlock()
	return answer, nil
}

func (m *mutatingClient) asAsked(lb hns.LoadBalancer) hns.LoadBalancer {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.askedLBs[lb.ID]; ok {
		return *a.Clone()
	}
	return lb
}

func (m *mutatingClient) CreateLoadBalancer(lb *hns.LoadBalancer) (*hns.LoadBalancer, error) {
	return m.sent(lb, m.Client.CreateLoadBalancer)
}

func (m *mutatingClient) UpdateLoadBalancer(id string, lb *hns.LoadBalancer) (*hns.LoadBalancer, error) {
	return m.sent(lb, func(c *hns.LoadBalancer) (*hns.LoadBalancer, error) { return m.Client.UpdateLoadBalancer(id, c) })
}

func (m *mutatingClient) LoadBalancer(id string) (*hns.LoadBalancer, error) {
	got, err := m.Client.LoadBalancer(id)
	if err != nil {
		return nil, err
	}
	a := m.asAsked(*got)
	return &a, nil
}

func (m *mutatingClient) LoadBalancers() ([]hns.LoadBalancer, error) {
	got, err := m.Client.LoadBalancers()
	for i := range got {
		got[i] = m.asAsked(got[i])
	}
	return got, err
}

func (m *mutatingClient) DeleteLoadBalancer(id string) error {
	m.mu.Lock()
	delete(m.askedLBs, id)
	m.mu.Unlock()
	return m.Client.DeleteLoadBalancer(id)
}

func (m *mutatingClient) CreateEndpoint(networkID string, ep *hns.Endpoint) (*hns.Endpoint, error) {
	mutated := cloneEP(ep)
	if m.ep != nil {
		m.ep(mutated)
	}
	got, err := m.Client.CreateEndpoint(networkID, mutated)
	if err != nil {
		return nil, err
	}
	answer := cloneEP(ep)
	answer.ID, answer.HostComputeNetwork = got.ID, got.HostComputeNetwork
	m.mu.Lock()
	m.askedEPs[got.ID] = *cloneEP(answer)
	m.mu.Unlock()
	return answer, nil
}

func (m *mutatingClient) Endpoints(networkID string) ([]hns.Endpoint, error) {
	got, err := m.Client.Endpoints(networkID)
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range got {
		if a, ok := m.askedEPs[got[i].ID]; ok {
			got[i] = *cloneEP(&a)
		}
	}
	return got, err
}

func (m *mutatingClient) DeleteEndpoint(id string) error {
	m.mu.Lock()
	delete(m.askedEPs, id)
	m.mu.Unlock()
	return m.Client.DeleteEndpoint(id)
}

// The mutations: each changes one thing the driver sets, as a bug in the
// driver would.
var (
	dropExternalDSR = mutating(func(lb *hns.LoadBalancer) {
		if slices.ContainsFunc(lb.PortMappings, func(pm hns.PortMapping) bool { return pm.Flags&hns.PortFlagVipExternalIP != 0 }) {
			lb.Flags &^= hns.LBFlagDSR // a load balancer of outside traffic: not a ClusterIP
		}
	}, nil)
	dropVipExternalIP = mutating(func(lb *hns.LoadBalancer) {
		for i := range lb.PortMappings {
			lb.PortMappings[i].Flags &^= hns.PortFlagVipExternalIP
		}
	}, nil)
	ignoreSourceVIPFlag = mutating(func(lb *hns.LoadBalancer) {
		if lb.SourceVIP != "" {
			lb.SourceVIP = conformance.World.NodeIP(lb.Flags&hns.LBFlagIPv6 != 0).String()
		}
	}, nil)
	dropPreserveDIP = mutating(func(lb *hns.LoadBalancer) {
		for i := range lb.PortMappings {
			lb.PortMappings[i].Flags &^= hns.PortFlagPreserveDIP | hns.PortFlagUseMux
		}
	}, nil)
	thisNodeAsProviderAddress = mutating(nil, func(ep *hns.Endpoint) {
		if ep.Flags&hns.EndpointFlagRemote == 0 {
			return
		}
		for i, p := range ep.Policies {
			if p.Type == "ProviderAddress" {
				ep.Policies[i].Settings, _ = json.Marshal(hns.ProviderAddressSettings{ProviderAddress: conformance.World.NodeIP(false).String()})
			}
		}
	})
)

// columns are the HNS conformance columns (as TestConformance runs them).
var columns = []struct {
	name, network string
	build         hnssim.Build
}{
	{"hns-l2bridge", "L2Bridge", hnssim.Windows2022},
	{"hns-overlay", "Overlay", hnssim.Windows2025},
}

// TestMutationsFailNamedCases breaks, one at a time, what the driver asks
// of HNS (through the client it talks to, the driver untouched) and shows
// that named cases FAIL in each HNS column: the shared conformance cases
// and the HNS-only checks ("hns-only:" names, hnsonly_test.go). A mutation
// that changes nothing in a column (SourceVIP is the node IP on l2bridge
// anyway; l2bridge endpoints carry no provider address) names no case
// there.
func TestMutationsFailNamedCases(t *testing.T) {
	cases, err := conformance.Cases()
	if err != nil {
		t.Fatal(err)
	}
	hnsOnly := loadHNSOnlyCases(t)
	overlayRemote := []string{"clusterip-tcp", "clusterip-udp", "nodeport-from-external", "loadbalancer-ip", "external-ip",
		"hns-only:masqueraded-source-is-the-node"}
	for _, m := range []struct {
		name     string
		wrap     func(hns.Client) hns.Client
		mustFail map[string][]string // column -> cases
	}{
		{"drops DSR from external load balancers", dropExternalDSR, map[string][]string{
			"hns-l2bridge": {"etp-local-keeps-client-source", "hns-only:preserve-destination-backend-sees-the-vip"},
			"hns-overlay":  {"etp-local-keeps-client-source", "hns-only:preserve-destination-backend-sees-the-vip"}}},
		{"drops VipExternalIP", dropVipExternalIP, map[string][]string{
			"hns-l2bridge": {"hns-only:established-connections-keep-their-backend"},
			"hns-overlay":  {"hns-only:established-connections-keep-their-backend"}}},
		{"ignores --hns-source-vip", ignoreSourceVIPFlag, map[string][]string{
			"hns-overlay": {"hns-only:masqueraded-source-is-the-node"}}},
		{"drops PreserveDIP and UseMux", dropPreserveDIP, map[string][]string{
			"hns-l2bridge": {"hns-only:preserve-destination-backend-sees-the-vip"},
			"hns-overlay":  {"hns-only:preserve-destination-backend-sees-the-vip"}}},
		{"gives remote endpoints this node's provider address", thisNodeAsProviderAddress, map[string][]string{
			"hns-overlay": overlayRemote}},
	} {
		for _, col := range columns {
			t.Run(m.name+"/"+col.name, func(t *testing.T) {
				h := Start(t, col.name, col.build, col.network, WrapClient(m.wrap))
				failed := map[string]string{}
				for _, c := range cases {
					if r := conformance.Check(context.Background(), h, c); r.Status == conformance.Fail {
						failed[c.Name] = strings.Join(r.Failures, "\n")
					}
				}
				for _, check := range hnsOnlyChecks {
					if msg := check.run(Start(t, col.name, col.build, col.network, WrapClient(m.wrap)), hnsOnly); msg != "" {
						failed["hns-only:"+check.name] = msg
					}
				}
				for _, name := range m.mustFail[col.name] {
					msg, ok := failed[name]
					switch {
					case !ok:
						t.Errorf("%s passed on a driver that %s", name, m.name)
					case !strings.HasPrefix(name, "hns-only:") && !(strings.Contains(msg, "probe") && strings.Contains(msg, "expected") && strings.Contains(msg, "saw")):
						t.Errorf("%s: failure %q does not say which probe, what was expected and what was seen", name, msg)
					}
				}
				t.Logf("%d failed on a driver that %s: %v", len(failed), m.name, slices.Sorted(maps.Keys(failed)))
			})
		}
	}
}
