//go:build linux

package e2e

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/core/object"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
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
			Annotations: map[string]string{object.AnnotationLastChangeTriggerTime: time.Now().UTC().Format(time.RFC3339Nano)}},
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

// webService makes namespace ns with a ClusterIP Service name (port 80 to
// 8080) and its slice name-1 holding one endpoint, 10.244.1.5 (pod p1 of
// the world's node-1). It returns the Service's ClusterIP and port, and
// the namespace's slices to change.
func webService(t testing.TB, c *cluster, ns, name string) (netip.AddrPort, discoveryclient.EndpointSliceInterface) {
	t.Helper()
	ctx := context.Background()
	c.namespace(t, ns)
	svc, err := c.Admin.CoreV1().Services(ns).Create(ctx, service(ns, name, v1.ServiceTypeClusterIP, 80, 8080, 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eps := c.Admin.DiscoveryV1().EndpointSlices(ns)
	if _, err := eps.Create(ctx, slice(ns, name+"-1", name, 8080, endpoint{"10.244.1.5", "node-1", false}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return netip.AddrPortFrom(netip.MustParseAddr(svc.Spec.ClusterIP), 80), eps
}
