package object_test

import (
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"time"

	"github.com/switchyard-proxy/switchyard/core/testobj"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	. "github.com/switchyard-proxy/switchyard/core/object"
)

func TestServiceKeepsWhatTheCoreReads(t *testing.T) {
	svc := testobj.Service("ns", "web", testobj.ClusterIPs("10.96.0.10", "fd00::10"),
		testobj.Port("http", v1.ProtocolTCP, 80, 30080), testobj.Port("dns", v1.ProtocolUDP, 53, 0))
	svc.Labels = map[string]string{LabelServiceProxyName: "", "app": "web"}
	svc.Annotations = map[string]string{v1.LastAppliedConfigAnnotation: "{...}", "keep": "me"}
	svc.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	svc.ResourceVersion = "42"
	svc.Spec.Type = v1.ServiceTypeLoadBalancer
	svc.Spec.ExternalIPs = []string{"192.0.2.1"}
	svc.Spec.LoadBalancerSourceRanges = []string{"198.51.100.0/24"}
	svc.Spec.SessionAffinity = v1.ServiceAffinityClientIP
	svc.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}}
	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	svc.Spec.InternalTrafficPolicy = ptr.To(v1.ServiceInternalTrafficPolicyLocal)
	svc.Spec.HealthCheckNodePort = 31000
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{
		{IP: "203.0.113.1"}, {Hostname: "lb.example"}, {IP: "203.0.113.2", IPMode: ptr.To(v1.LoadBalancerIPModeProxy)}}

	got := ServiceOf(svc)
	want := Service{Meta: Meta{Namespace: "ns", Name: "web", ResourceVersion: "42"}, HasProxyName: true,
		Annotations: map[string]string{"keep": "me"}, Type: v1.ServiceTypeLoadBalancer,
		ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10", "fd00::10"}, ExternalIPs: []string{"192.0.2.1"},
		LoadBalancerSourceRanges: []string{"198.51.100.0/24"}, SessionAffinity: v1.ServiceAffinityClientIP,
		ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal, InternalTrafficPolicy: v1.ServiceInternalTrafficPolicyLocal,
		HealthCheckNodePort: 31000,
		Ports:               []ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080}, {Name: "dns", Protocol: v1.ProtocolUDP, Port: 53}},
		Ingress:             []Ingress{{IP: "203.0.113.1"}, {IP: "203.0.113.2", IPMode: v1.LoadBalancerIPModeProxy}},
	}
	if got.AffinityTimeout == nil || *got.AffinityTimeout != 60 {
		t.Fatalf("affinity timeout %v", got.AffinityTimeout)
	}
	got.AffinityTimeout = nil
	if diff := cmpDiff(want, *got); diff != "" {
		t.Fatalf("converted Service differs:\n%s", diff)
	}
	if s := ServiceOf(testobj.Service("ns", "plain")); s.Annotations != nil || s.HasProxyName || s.Headless || s.AffinityTimeout != nil {
		t.Errorf("an object without labels, annotations or affinity: %+v", s)
	}
}

func TestEndpointSliceKeepsWhatTheCoreReadsAndSharesWhatRepeats(t *testing.T) {
	at := time.Date(2026, 11, 24, 10, 0, 0, 123000000, time.UTC)
	var c Converter
	var out []*EndpointSlice
	for _, name := range []string{"web-1", "web-2"} {
		s := testobj.Slice("ns", name, "web", discovery.AddressTypeIPv4, testobj.SlicePort("http", v1.ProtocolTCP, 8080),
			testobj.Endpoint("10.244.0.5", testobj.OnNode("node-1"), testobj.InZone("zone-a")),
			testobj.Endpoint("10.244.0.6", testobj.OnNode("node-1"), testobj.InZone("zone-a")))
		s.Labels[LabelHeadless] = ""
		s.Annotations = map[string]string{AnnotationLastChangeTriggerTime: at.Format(time.RFC3339Nano)}
		s.Endpoints[0].Conditions = discovery.EndpointConditions{Ready: ptr.To(false), Terminating: ptr.To(true)}
		s.Endpoints[1].Conditions = discovery.EndpointConditions{}
		s.Endpoints[1].Hints = &discovery.EndpointHints{ForZones: []discovery.ForZone{{Name: "zone-a"}}, ForNodes: []discovery.ForNode{{Name: "node-1"}}}
		s.Endpoints = append(s.Endpoints, discovery.Endpoint{})
		out = append(out, c.EndpointSlice(s))
	}
	a := out[0]
	switch {
	case a.ServiceName != "web" || !a.Headless || a.HasProxyName || !a.TriggerTime.Equal(at) || a.AddressType != discovery.AddressTypeIPv4:
		t.Errorf("slice fields: %+v", a)
	case len(a.Ports) != 1 || *a.Ports[0].Name != "http" || *a.Ports[0].Port != 8080 || *a.Ports[0].Protocol != v1.ProtocolTCP:
		t.Errorf("ports: %+v", a.Ports)
	case len(a.Endpoints) != 3:
		t.Fatalf("endpoints: %+v", a.Endpoints)
	}
	wantEps := []Endpoint{
		{Address: "10.244.0.5", Where: &Where{NodeName: "node-1", Zone: "zone-a"}, Serving: true, Terminating: true},
		{Address: "10.244.0.6", Where: &Where{NodeName: "node-1", Zone: "zone-a"}, Hints: &Hints{ForZones: []string{"zone-a"}, ForNodes: []string{"node-1"}}, Ready: true, Serving: true},
		{NoAddress: true, Ready: true, Serving: true},
	}
	if diff := cmpDiff(wantEps, a.Endpoints); diff != "" {
		t.Errorf("endpoints differ:\n%s", diff)
	}
	b := out[1]
	if a.Endpoints[0].Where != b.Endpoints[1].Where {
		t.Errorf("endpoints on one node and zone do not share their Where across slices")
	}
	other := c.EndpointSlice(testobj.Slice("ns", "db-1", "db", discovery.AddressTypeIPv4,
		testobj.Endpoint("10.244.1.5", testobj.OnNode("node-1"), testobj.InZone("zone-b"))))
	if w := other.Endpoints[0].Where; w == a.Endpoints[0].Where || !sameString(w.NodeName, a.Endpoints[0].NodeName()) {
		t.Errorf("another zone on the same node: %+v (node name not shared, or the same Where)", w)
	}
	bad := testobj.Slice("ns", "x", "web", discovery.AddressTypeIPv4)
	bad.Annotations = map[string]string{AnnotationLastChangeTriggerTime: "yesterday"}
	if s := EndpointSliceOf(bad); !s.TriggerTime.IsZero() || s.Endpoints != nil {
		t.Errorf("an unparsable trigger time or no endpoints: %+v", s)
	}
}

// TestConvertIsAnInformerTransform: client-go may hand a transform an
// object it already transformed, and keys what it stores with
// MetaNamespaceKeyFunc.
func TestConvertIsAnInformerTransform(t *testing.T) {
	var c Converter
	for _, tc := range []struct {
		in  any
		key string
	}{
		{testobj.Service("ns", "web"), "ns/web"},
		{testobj.Slice("ns", "web-1", "web", discovery.AddressTypeIPv4), "ns/web-1"},
		{testobj.Node("node-1", "zone-a", "192.0.2.1"), "node-1"},
	} {
		once, err := c.Convert(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		twice, _ := c.Convert(once)
		if twice != once {
			t.Errorf("%T: converting again changed it", once)
		}
		if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(once); err != nil || k != tc.key {
			t.Errorf("%T: key %q, %v; want %q", once, k, err, tc.key)
		}
	}
}

// TestCachesReadTheCopiesInPlace: client-go reads a copy's identity
// through meta.Accessor on every cache operation; the copies are
// metav1.Objects themselves, so reading it allocates nothing, and what a
// copy does not keep reads as unset.
func TestCachesReadTheCopiesInPlace(t *testing.T) {
	svc := ServiceOf(testobj.Service("ns", "web"))
	svc.ResourceVersion = "7"
	slice := EndpointSliceOf(testobj.Slice("ns", "web-1", "web", discovery.AddressTypeIPv4))
	for _, obj := range []any{svc, slice} {
		var rv string
		allocs := testing.AllocsPerRun(100, func() {
			m, err := meta.Accessor(obj)
			if err != nil {
				t.Fatal(err)
			}
			rv = m.GetResourceVersion()
		})
		if allocs != 0 {
			t.Errorf("%T: meta.Accessor and GetResourceVersion allocated %v times", obj, allocs)
		}
		m, _ := meta.Accessor(obj)
		m.SetResourceVersion("8")
		m.SetUID("ignored")
		if got := []any{m.GetNamespace(), m.GetResourceVersion(), m.GetUID(), m.GetLabels(), m.GetManagedFields() == nil}; !cmp.Equal(got, []any{"ns", "8", types.UID(""), map[string]string(nil), true}) {
			t.Errorf("%T: read back %v (resource version before: %q)", obj, got, rv)
		}
	}
	svc.Annotations = map[string]string{"keep": "me"}
	if m, _ := meta.Accessor(svc); m.GetAnnotations()["keep"] != "me" {
		t.Errorf("a Service's annotations: %v", m.GetAnnotations())
	}
}

func TestNodeIsTrimmed(t *testing.T) {
	n := testobj.Node("node-1", "zone-a", "192.0.2.1")
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady}}
	n.Status.Images = []v1.ContainerImage{{Names: []string{"img"}}}
	n.Spec.Taints = []v1.Taint{{Key: "k"}}
	n.Spec.PodCIDRs = []string{"10.244.0.0/24"}
	n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	Node(n)
	if n.Status.Conditions != nil || n.Status.Images != nil || n.Spec.Taints != nil || n.ManagedFields != nil ||
		len(n.Status.Addresses) != 1 || len(n.Spec.PodCIDRs) != 1 || n.Labels[LabelZone] != "zone-a" {
		t.Errorf("node after trimming: %+v", n)
	}
}

func cmpDiff(want, got any) string { return cmp.Diff(want, got) }

// sameString reports whether two strings share their bytes.
func sameString(a, b string) bool { return a == b && unsafe.StringData(a) == unsafe.StringData(b) }
