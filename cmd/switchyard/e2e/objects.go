//go:build linux

package e2e

import (
	"time"

	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Objects the e2e test writes, in the world's addressing.

// nodes are the world's two Nodes as a cluster holds them (pod CIDRs in
// the spec, addresses in the status, the OS label the chart selects on).
func nodes() []*v1.Node {
	out := conformance.World.NodeObjects()
	for _, n := range out {
		n.Labels[v1.LabelOSStable] = "linux"
	}
	return out
}

func service(ns, name string, typ v1.ServiceType, port, target, nodePort int32) *v1.Service {
	s := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ServiceSpec{Type: typ, Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: port,
			TargetPort: intstr.FromInt32(target), NodePort: nodePort}}},
	}
	if typ != v1.ServiceTypeClusterIP {
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
	}
	return s
}

// endpoint is one backend in a slice: ip on node, with conditions.
type endpoint struct {
	ip, node    string
	terminating bool
}

func slice(ns, name, svc string, port int32, eps ...endpoint) *discovery.EndpointSlice {
	s := &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{discovery.LabelServiceName: svc, discovery.LabelManagedBy: "switchyard-e2e"},
			// What the EndpointSlice controller sets: the proxy measures
			// network programming latency from it.
			Annotations: map[string]string{tracker.AnnotationLastChangeTriggerTime: time.Now().UTC().Format(time.RFC3339Nano)}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(v1.ProtocolTCP), Port: ptr.To(port)}},
	}
	for _, e := range eps {
		c := discovery.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}
		if e.terminating {
			c = discovery.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)}
		}
		s.Endpoints = append(s.Endpoints, discovery.Endpoint{Addresses: []string{e.ip}, NodeName: ptr.To(e.node), Conditions: c})
	}
	return s
}
