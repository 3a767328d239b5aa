package object_test

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	. "github.com/switchyard-proxy/switchyard/core/object"
)

// randomService makes a Service with each field the copy reads present or
// not, empty or not, and fields it skips filled.
func randomService(r *rand.Rand) *v1.Service {
	pick := func(vals ...string) string { return vals[r.Intn(len(vals))] }
	maybe := func() bool { return r.Intn(2) == 0 }
	some := func(vals ...string) []string {
		var out []string
		for range r.Intn(3) {
			out = append(out, pick(vals...))
		}
		return out
	}
	s := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: pick("web", ""), Namespace: pick("ns", ""), ResourceVersion: pick("5", ""),
			Labels: map[string]string{}, Annotations: map[string]string{}, UID: "u",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", FieldsV1: metav1.NewFieldsV1(`{}`)}}},
		Spec: v1.ServiceSpec{
			Type: v1.ServiceType(pick("ClusterIP", "NodePort", "LoadBalancer", "ExternalName", "")), ClusterIP: pick("10.96.0.1", "None", ""),
			ClusterIPs: some("10.96.0.1", "fd00::1"), ExternalIPs: some("192.0.2.1", ""), LoadBalancerSourceRanges: some("198.51.100.0/24"),
			SessionAffinity:       v1.ServiceAffinity(pick("ClientIP", "None", "")),
			ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicy(pick("Local", "Cluster", "")),
			HealthCheckNodePort:   int32(r.Intn(3) * 31000), Selector: map[string]string{"app": "web"},
			IPFamilies: []v1.IPFamily{v1.IPv4Protocol}, LoadBalancerIP: "203.0.113.9", PublishNotReadyAddresses: maybe(),
		},
	}
	for _, kv := range [][2]string{{LabelServiceProxyName, pick("other", "")}, {LabelHeadless, ""}, {"app", "web"}} {
		if maybe() {
			s.Labels[kv[0]] = kv[1]
		}
	}
	for _, kv := range [][2]string{{v1.LastAppliedConfigAnnotation, "{}"}, {"keep", pick("me", "")}, {metav1.InitialEventsAnnotationKey, "true"}} {
		if maybe() {
			s.Annotations[kv[0]] = kv[1]
		}
	}
	if maybe() {
		s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{}
		if maybe() {
			s.Spec.SessionAffinityConfig.ClientIP = &v1.ClientIPConfig{}
			if maybe() {
				s.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds = ptr.To(int32(r.Intn(86401) - 1))
			}
		}
	}
	if maybe() {
		s.Spec.InternalTrafficPolicy = ptr.To(v1.ServiceInternalTrafficPolicy(pick("Local", "Cluster", "")))
	}
	for range r.Intn(4) {
		s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{Name: pick("http", ""), Protocol: v1.Protocol(pick("TCP", "UDP", "SCTP", "")),
			Port: int32(r.Intn(70000) - 1), NodePort: int32(r.Intn(2) * 30080), AppProtocol: ptr.To("h2c")})
	}
	for range r.Intn(4) {
		in := v1.LoadBalancerIngress{IP: pick("203.0.113.1", ""), Hostname: pick("lb.example", "")}
		if maybe() {
			in.IPMode = ptr.To(v1.LoadBalancerIPMode(pick("VIP", "Proxy", "")))
		}
		s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, in)
	}
	if maybe() {
		s.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "True"}}
	}
	return s
}

func TestDecodeServiceMatchesConvert(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for i := range 3000 {
		s := randomService(r)
		b, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			b = protowire.AppendTag(b, 99, protowire.BytesType)
			b = protowire.AppendString(b, "later")
		}
		got, err := new(Converter).DecodeService(b)
		if err != nil {
			t.Fatalf("service %d: %v", i, err)
		}
		if diff := cmp.Diff(ServiceOf(s), got); diff != "" {
			t.Fatalf("service %d (%+v): the wire's copy differs from the converted one (-converted +wire):\n%s", i, s, diff)
		}
	}
}

func TestDecodeServiceRefusesBadInput(t *testing.T) {
	good, _ := (&v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1"}}).Marshal()
	portAsBytes := protowire.AppendTag(nil, 2, protowire.BytesType) // spec whose healthCheckNodePort is bytes
	portAsBytes = protowire.AppendBytes(portAsBytes, protowire.AppendString(protowire.AppendTag(nil, 12, protowire.BytesType), "x"))
	for name, b := range map[string][]byte{"truncated": good[:len(good)-2], "wrong wire type": portAsBytes} {
		var api v1.Service
		if api.Unmarshal(b) == nil {
			t.Errorf("%s: the API type decodes it; the case tests nothing", name)
		}
		if _, err := new(Converter).DecodeService(b); err == nil || !strings.HasPrefix(err.Error(), "Service: ") {
			t.Errorf("%s: error %v, want a Service error", name, err)
		}
	}
}

func TestServiceDeepCopyObject(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for range 200 {
		s := ServiceOf(randomService(r))
		c := s.DeepCopyObject().(*Service)
		if diff := cmp.Diff(s, c); diff != "" {
			t.Fatalf("copy differs:\n%s", diff)
		}
		if len(c.Ports) == 0 || c.AffinityTimeout == nil || len(c.Annotations) == 0 || len(c.ClusterIPs) == 0 {
			continue
		}
		c.Ports[0].Port, *c.AffinityTimeout, c.Annotations["keep"], c.ClusterIPs[0] = -5, -5, "changed", "changed"
		if s.Ports[0].Port == -5 || *s.AffinityTimeout == -5 || s.Annotations["keep"] == "changed" || s.ClusterIPs[0] == "changed" {
			t.Fatal("the copy shares what it must not")
		}
		return
	}
	t.Fatal("no Service with ports, a timeout, annotations and cluster IPs")
}
