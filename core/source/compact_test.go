package source

import (
	"testing"

	"github.com/switchyard-proxy/switchyard/core/testobj"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCompactKeepsWhatTheCoreReadsAndSharesWhatRepeats(t *testing.T) {
	var c Compactor
	yes := true
	svc := testobj.Service("ns", "web", testobj.ClusterIPs("10.96.0.10"), testobj.Port("http", v1.ProtocolTCP, 80, 0))
	svc.Spec.Selector = map[string]string{"app": "web"}
	svc.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	svc.Annotations = map[string]string{v1.LastAppliedConfigAnnotation: "{...}", "keep": "me"}
	svc.UID = "uid-1"
	c.Compact(svc)
	if svc.Spec.Selector != nil || svc.ManagedFields != nil || len(svc.Annotations) != 1 || svc.Annotations["keep"] != "me" ||
		svc.UID != "uid-1" || len(svc.Spec.ClusterIPs) != 1 || len(svc.Spec.Ports) != 1 {
		t.Fatalf("service after Compact: %+v", svc)
	}

	slices := []*discovery.EndpointSlice{}
	for _, name := range []string{"web-1", "web-2"} {
		s := testobj.Slice("ns", name, "web", discovery.AddressTypeIPv4, testobj.SlicePort("http", v1.ProtocolTCP, 8080),
			testobj.Endpoint("10.244.0.5", testobj.OnNode("node-1"), testobj.InZone("zone-a")), testobj.Endpoint("10.244.0.6", testobj.OnNode("node-1"), testobj.InZone("zone-a")))
		s.Endpoints = append(make([]discovery.Endpoint, 0, 8), s.Endpoints...)
		s.OwnerReferences = []metav1.OwnerReference{{Kind: "Service", Name: "web", Controller: &yes}}
		for i := range s.Endpoints {
			s.Endpoints[i].TargetRef = &v1.ObjectReference{Kind: "Pod", Name: "web-x"}
			ready := true
			s.Endpoints[i].Conditions.Ready = &ready
		}
		c.Compact(s)
		slices = append(slices, s)
	}
	a, b := slices[0].Endpoints, slices[1].Endpoints
	switch {
	case cap(a) != len(a):
		t.Errorf("endpoint list keeps spare capacity: len %d cap %d", len(a), cap(a))
	case slices[0].OwnerReferences != nil || a[0].TargetRef != nil:
		t.Errorf("owner or target references kept")
	case a[0].NodeName == nil || *a[0].NodeName != "node-1" || *a[1].Zone != "zone-a" || a[0].Addresses[0] != "10.244.0.5":
		t.Errorf("lost what the core reads: %+v", a[0])
	case a[0].NodeName != b[1].NodeName || a[0].Zone != b[0].Zone:
		t.Errorf("node names and zones are not shared")
	case a[0].Conditions.Ready != b[1].Conditions.Ready || !*a[0].Conditions.Ready:
		t.Errorf("conditions are not shared, or changed")
	}

	n := testobj.Node("node-1", "zone-a", "192.0.2.1")
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady}}
	n.Status.Images = []v1.ContainerImage{{Names: []string{"img"}}}
	n.Spec.Taints = []v1.Taint{{Key: "k"}}
	n.Spec.PodCIDRs = []string{"10.244.0.0/24"}
	c.Compact(n)
	if n.Status.Conditions != nil || n.Status.Images != nil || n.Spec.Taints != nil || len(n.Status.Addresses) != 1 ||
		n.Labels[v1.LabelTopologyZone] != "zone-a" || len(n.Spec.PodCIDRs) != 1 {
		t.Fatalf("node after Compact: %+v", n)
	}
}
