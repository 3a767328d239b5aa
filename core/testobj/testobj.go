// Package testobj builds real k8s.io/api Services, EndpointSlices and Nodes
// for tests, with small option functions so a test reads like the object.
package testobj

import (
	"net/netip"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ServiceOption changes a Service under construction.
type ServiceOption func(*v1.Service)

// Service returns a ClusterIP Service with the given options applied.
func Service(ns, name string, opts ...ServiceOption) *v1.Service {
	s := &v1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, SessionAffinity: v1.ServiceAffinityNone},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// ClusterIPs sets spec.clusterIP(s) and spec.ipFamilies from the IPs.
func ClusterIPs(ips ...string) ServiceOption {
	return func(s *v1.Service) {
		s.Spec.ClusterIPs = ips
		s.Spec.ClusterIP = ""
		s.Spec.IPFamilies = nil
		if len(ips) > 0 {
			s.Spec.ClusterIP = ips[0]
		}
		for _, ip := range ips {
			if a, err := netip.ParseAddr(ip); err == nil {
				fam := v1.IPv4Protocol
				if a.Is6() {
					fam = v1.IPv6Protocol
				}
				s.Spec.IPFamilies = append(s.Spec.IPFamilies, fam)
			}
		}
	}
}

// Type sets spec.type; NodePort and LoadBalancer default ETP to Cluster.
func Type(t v1.ServiceType) ServiceOption {
	return func(s *v1.Service) {
		s.Spec.Type = t
		if (t == v1.ServiceTypeNodePort || t == v1.ServiceTypeLoadBalancer) && s.Spec.ExternalTrafficPolicy == "" {
			s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
		}
	}
}

// Port adds a spec.ports entry.
func Port(name string, proto v1.Protocol, port, nodePort int32) ServiceOption {
	return func(s *v1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Name: name, Protocol: proto, Port: port, NodePort: nodePort})
	}
}

// ExternalIPs sets spec.externalIPs.
func ExternalIPs(ips ...string) ServiceOption {
	return func(s *v1.Service) { s.Spec.ExternalIPs = ips }
}

// Ingress adds a VIP-mode load-balancer ingress IP.
func Ingress(ip string) ServiceOption {
	return func(s *v1.Service) {
		s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, v1.LoadBalancerIngress{IP: ip})
	}
}

// ProxyIngress adds an ingress IP with ipMode: Proxy.
func ProxyIngress(ip string) ServiceOption {
	return func(s *v1.Service) {
		s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress,
			v1.LoadBalancerIngress{IP: ip, IPMode: ptr.To(v1.LoadBalancerIPModeProxy)})
	}
}

// SourceRanges sets spec.loadBalancerSourceRanges.
func SourceRanges(r ...string) ServiceOption {
	return func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = r }
}

// ETPLocal sets externalTrafficPolicy: Local.
func ETPLocal(s *v1.Service) { s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal }

// ITPLocal sets internalTrafficPolicy: Local.
func ITPLocal(s *v1.Service) {
	s.Spec.InternalTrafficPolicy = ptr.To(v1.ServiceInternalTrafficPolicyLocal)
}

// HealthCheckNodePort sets spec.healthCheckNodePort.
func HealthCheckNodePort(p int32) ServiceOption {
	return func(s *v1.Service) { s.Spec.HealthCheckNodePort = p }
}

// ClientIPAffinity sets ClientIP session affinity; timeout 0 leaves the
// config out (the API default then applies).
func ClientIPAffinity(timeout int32) ServiceOption {
	return func(s *v1.Service) {
		s.Spec.SessionAffinity = v1.ServiceAffinityClientIP
		if timeout != 0 {
			s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To(timeout)}}
		}
	}
}

// Label sets a label.
func Label(k, v string) ServiceOption {
	return func(s *v1.Service) {
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[k] = v
	}
}

// Annotation sets an annotation.
func Annotation(k, v string) ServiceOption {
	return func(s *v1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[k] = v
	}
}

// SliceOption changes an EndpointSlice under construction.
type SliceOption func(*discovery.EndpointSlice)

// Slice returns an EndpointSlice of the Service svc.
func Slice(ns, name, svc string, at discovery.AddressType, opts ...SliceOption) *discovery.EndpointSlice {
	s := &discovery.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			discovery.LabelServiceName: svc,
		}},
		AddressType: at,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// SlicePort adds a port.
func SlicePort(name string, proto v1.Protocol, port int32) SliceOption {
	return func(s *discovery.EndpointSlice) {
		s.Ports = append(s.Ports, discovery.EndpointPort{Name: ptr.To(name), Protocol: ptr.To(proto), Port: ptr.To(port)})
	}
}

// SliceLabel sets a label on the slice.
func SliceLabel(k, v string) SliceOption {
	return func(s *discovery.EndpointSlice) { s.Labels[k] = v }
}

// EndpointOption changes an endpoint under construction.
type EndpointOption func(*discovery.Endpoint)

// Endpoint adds an endpoint; with no options it is ready (conditions nil).
func Endpoint(ip string, opts ...EndpointOption) SliceOption {
	return func(s *discovery.EndpointSlice) {
		e := discovery.Endpoint{Addresses: []string{ip}}
		for _, o := range opts {
			o(&e)
		}
		s.Endpoints = append(s.Endpoints, e)
	}
}

// OnNode sets the endpoint's nodeName.
func OnNode(n string) EndpointOption { return func(e *discovery.Endpoint) { e.NodeName = ptr.To(n) } }

// InZone sets the endpoint's zone.
func InZone(z string) EndpointOption { return func(e *discovery.Endpoint) { e.Zone = ptr.To(z) } }

// Conditions sets ready, serving and terminating explicitly.
func Conditions(ready, serving, terminating bool) EndpointOption {
	return func(e *discovery.Endpoint) {
		e.Conditions = discovery.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(serving), Terminating: ptr.To(terminating)}
	}
}

// NotReady marks the endpoint not ready, not serving, not terminating.
func NotReady(e *discovery.Endpoint) { Conditions(false, false, false)(e) }

// Terminating marks the endpoint serving and terminating (not ready).
func Terminating(e *discovery.Endpoint) { Conditions(false, true, true)(e) }

// ZoneHints sets hints.forZones.
func ZoneHints(z ...string) EndpointOption {
	return func(e *discovery.Endpoint) {
		if e.Hints == nil {
			e.Hints = &discovery.EndpointHints{}
		}
		for _, x := range z {
			e.Hints.ForZones = append(e.Hints.ForZones, discovery.ForZone{Name: x})
		}
	}
}

// NodeHints sets hints.forNodes.
func NodeHints(n ...string) EndpointOption {
	return func(e *discovery.Endpoint) {
		if e.Hints == nil {
			e.Hints = &discovery.EndpointHints{}
		}
		for _, x := range n {
			e.Hints.ForNodes = append(e.Hints.ForNodes, discovery.ForNode{Name: x})
		}
	}
}

// Node returns a Node with a zone label and InternalIP addresses.
func Node(name, zone string, ips ...string) *v1.Node {
	n := &v1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
	}
	if zone != "" {
		n.Labels[v1.LabelTopologyZone] = zone
	}
	for _, ip := range ips {
		n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	return n
}

// WithPodCIDRs sets a Node's spec.podCIDRs (and spec.podCIDR to the first).
func WithPodCIDRs(n *v1.Node, cidrs ...string) *v1.Node {
	n.Spec.PodCIDRs = cidrs
	if len(cidrs) > 0 {
		n.Spec.PodCIDR = cidrs[0]
	}
	return n
}
