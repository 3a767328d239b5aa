package build

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// chooser turns fuzz bytes into choices; when the bytes run out every
// choice is 0.
type chooser struct{ b []byte }

func (c *chooser) n(max int) int {
	if len(c.b) == 0 || max <= 0 {
		return 0
	}
	v := int(c.b[0]) % max
	c.b = c.b[1:]
	return v
}

func (c *chooser) bool() bool { return c.n(2) == 1 }

func (c *chooser) pick(options ...string) string { return options[c.n(len(options))] }

// raw takes up to n bytes as a string, for hostile values.
func (c *chooser) raw(n int) string {
	k := c.n(n + 1)
	if k > len(c.b) {
		k = len(c.b)
	}
	s := string(c.b[:k])
	c.b = c.b[k:]
	return s
}

func (c *chooser) ip() string {
	switch c.n(4) {
	case 0:
		return c.pick("10.0.0.1", "10.0.0.2", "10.0.1.1", "fd00::1", "fd00::2", "010.000.000.001", "::ffff:10.0.0.1")
	case 1:
		return c.pick("127.0.0.1", "0.0.0.0", "::", "169.254.0.1", "fe80::1", "224.0.0.1", "", "None", "1.2.3")
	case 2:
		return c.raw(16)
	}
	return fmt.Sprintf("10.%d.%d.%d", c.n(3), c.n(3), c.n(256))
}

func (c *chooser) port() int32 {
	return []int32{0, 1, 80, 8080, 65535, 65536, -1, 30000, 32767}[c.n(9)]
}

func (c *chooser) proto() v1.Protocol {
	return v1.Protocol(c.pick("TCP", "UDP", "SCTP", "", "tcp", "QUIC"))
}

func (c *chooser) service() *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: c.pick("svc", "")}}
	s.Spec.Type = v1.ServiceType(c.pick("ClusterIP", "NodePort", "LoadBalancer", "ExternalName", ""))
	for range c.n(3) + 1 {
		s.Spec.ClusterIPs = append(s.Spec.ClusterIPs, c.ip())
	}
	s.Spec.ClusterIP = s.Spec.ClusterIPs[0]
	for range c.n(4) {
		s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Name: c.pick("a", "b", ""), Protocol: c.proto(), Port: c.port(), NodePort: c.port()})
	}
	for range c.n(3) {
		s.Spec.ExternalIPs = append(s.Spec.ExternalIPs, c.ip())
	}
	for range c.n(3) {
		ing := v1.LoadBalancerIngress{IP: c.ip()}
		if c.bool() {
			ing.IPMode = ptr.To(v1.LoadBalancerIPMode(c.pick("VIP", "Proxy", "x")))
		}
		s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, ing)
	}
	for range c.n(3) {
		s.Spec.LoadBalancerSourceRanges = append(s.Spec.LoadBalancerSourceRanges, c.ip()+c.pick("/8", "/32", "/64", "/200", ""))
	}
	s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicy(c.pick("Cluster", "Local", "", "local"))
	if c.bool() {
		s.Spec.InternalTrafficPolicy = ptr.To(v1.ServiceInternalTrafficPolicy(c.pick("Cluster", "Local")))
	}
	s.Spec.HealthCheckNodePort = c.port()
	if c.bool() {
		s.Spec.SessionAffinity = v1.ServiceAffinity(c.pick("ClientIP", "None", "Sticky"))
		if c.bool() {
			s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{}}
			if c.bool() {
				s.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds = ptr.To([]int32{0, 1, 10800, 86400, 100000, -5}[c.n(6)])
			}
		}
	}
	if c.n(8) == 0 {
		s.Labels = map[string]string{c.pick(object.LabelServiceProxyName, object.LabelHeadless): c.pick("", "switchyard", "x")}
	}
	return s
}

func (c *chooser) slices() []*discovery.EndpointSlice {
	var out []*discovery.EndpointSlice
	for i := range c.n(4) {
		s := &discovery.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("s%d", i), Labels: map[string]string{discovery.LabelServiceName: "svc"}},
			AddressType: discovery.AddressType(c.pick("IPv4", "IPv6", "FQDN", "")),
		}
		for range c.n(3) {
			p := discovery.EndpointPort{Port: ptr.To(c.port())}
			if c.n(5) != 0 {
				p.Name = ptr.To(c.pick("a", "b", ""))
			}
			if c.bool() {
				p.Protocol = ptr.To(c.proto())
			}
			if c.n(6) == 0 {
				p.Port = nil
			}
			s.Ports = append(s.Ports, p)
		}
		for range c.n(5) {
			e := discovery.Endpoint{}
			for range c.n(3) {
				e.Addresses = append(e.Addresses, c.ip())
			}
			b := func() *bool {
				switch c.n(3) {
				case 0:
					return nil
				case 1:
					return ptr.To(true)
				}
				return ptr.To(false)
			}
			e.Conditions = discovery.EndpointConditions{Ready: b(), Serving: b(), Terminating: b()}
			if c.bool() {
				e.NodeName = ptr.To(c.pick("node-1", "node-2", ""))
			}
			if c.bool() {
				e.Hints = &discovery.EndpointHints{}
				for range c.n(3) {
					e.Hints.ForZones = append(e.Hints.ForZones, discovery.ForZone{Name: c.pick("zone-a", "zone-b", "")})
				}
				for range c.n(3) {
					e.Hints.ForNodes = append(e.Hints.ForNodes, discovery.ForNode{Name: c.pick("node-1", "node-2")})
				}
			}
			s.Endpoints = append(s.Endpoints, e)
		}
		out = append(out, s)
	}
	return out
}

func FuzzServicePorts(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("seed: a dual-stack LoadBalancer with local endpoints"))
	f.Add([]byte{1, 2, 0, 0, 1, 0, 2, 1, 3, 0, 1, 1, 2, 2, 1, 0, 0, 3, 2, 1, 1, 1, 0, 2, 1, 1, 1, 1, 3, 1, 0, 1, 1, 1, 1, 2, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &chooser{b: data}
		svc := c.service()
		sl := c.slices()
		node := graph.Node{Name: c.pick("node-1", ""), Zone: c.pick("zone-a", "")}
		opts := Options{ProxyName: c.pick("", "switchyard"), NodePortRange: []PortRange{{}, DefaultNodePortRange}[c.n(2)]}

		res := fromAPI(svc, sl, node, opts)
		checkInvariants(t, svc, res)

		// Slice order never matters.
		rev := slices.Clone(sl)
		slices.Reverse(rev)
		again := fromAPI(svc, rev, node, opts)
		if len(again.Ports) != len(res.Ports) {
			t.Fatalf("slice order changed the port count")
		}
		for i := range res.Ports {
			if !graph.Equal(res.Ports[i], again.Ports[i]) {
				t.Fatalf("slice order changed %s", res.Ports[i].Name)
			}
		}
		// The JSON form reads back to the same data.
		for _, sp := range res.Ports {
			b, err := json.Marshal(sp)
			if err != nil {
				t.Fatal(err)
			}
			var back graph.ServicePort
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if !graph.Equal(sp, &back) {
				t.Fatalf("JSON round trip changed %s:\n%s", sp.Name, b)
			}
		}
	})
}

func checkInvariants(t *testing.T, svc *v1.Service, res Result) {
	t.Helper()
	if res.Skipped != "" && len(res.Ports) != 0 {
		t.Fatal("skipped service produced ports")
	}
	for _, r := range res.Rejections {
		if r.Reason == "" || r.Message == "" || !slices.Contains(Reasons, r.Reason) {
			t.Fatalf("bad rejection %+v", r)
		}
	}
	for _, sp := range res.Ports {
		fams := sp.Families()
		if fams == 0 || sp.Port == 0 {
			t.Fatalf("%s: no family or port", sp.Name)
		}
		for _, ip := range append(slices.Clone(sp.ExternalIPs), sp.LoadBalancerIPs...) {
			if !fams.Has(graph.FamilyOf(ip)) {
				t.Fatalf("%s: frontend %s outside the service's families", sp.Name, ip)
			}
		}
		lists := map[string]graph.EndpointList{"internal": sp.InternalEndpoints, "external": sp.ExternalEndpoints, "shortCircuit": sp.ShortCircuitEndpoints}
		for what, list := range lists {
			eps := list.Slice()
			if !slices.IsSortedFunc(eps, graph.CompareEndpoints) {
				t.Fatalf("%s: %s endpoints not sorted", sp.Name, what)
			}
			for i, e := range eps {
				if i > 0 && graph.CompareEndpoints(eps[i-1], e) == 0 {
					t.Fatalf("%s: %s endpoint %s twice", sp.Name, what, e)
				}
				f := graph.FamilyOf(e.IP)
				if !fams.Has(f) || !sp.UsableFamilies.Has(f) {
					t.Fatalf("%s: %s endpoint %s of a family without frontends or usable endpoints", sp.Name, what, e)
				}
				if e.Port == 0 || forbiddenEndpointIP(e.IP) != "" {
					t.Fatalf("%s: %s endpoint %s invalid", sp.Name, what, e)
				}
				if !e.Ready && !(e.Serving && e.Terminating) {
					t.Fatalf("%s: %s endpoint %s neither ready nor serving-terminating", sp.Name, what, e)
				}
			}
		}
		if sp.ExternalTrafficPolicy == graph.PolicyLocal {
			for e := range sp.ExternalEndpoints.All() {
				if !e.Local {
					t.Fatalf("%s: ETP=Local external endpoint %s is not local", sp.Name, e)
				}
			}
		} else if sp.ShortCircuitEndpoints.Len() != 0 {
			t.Fatalf("%s: short-circuit endpoints with ETP=Cluster", sp.Name)
		}
		if sp.InternalTrafficPolicy == graph.PolicyLocal {
			for e := range sp.InternalEndpoints.All() {
				if !e.Local {
					t.Fatalf("%s: ITP=Local internal endpoint %s is not local", sp.Name, e)
				}
			}
		}
		if !sp.ExternallyAccessible() && sp.ExternalEndpoints.Len() != 0 {
			t.Fatalf("%s: external endpoints without an external frontend", sp.Name)
		}
		if sp.HealthCheckNodePort != 0 && (svc.Spec.Type != v1.ServiceTypeLoadBalancer || sp.ExternalTrafficPolicy != graph.PolicyLocal) {
			t.Fatalf("%s: health check port on a service that needs none", sp.Name)
		}
	}
}
