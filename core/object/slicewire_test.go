package object_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	. "github.com/switchyard-proxy/switchyard/core/object"
)

// randomSlice makes an EndpointSlice with each field the copy reads
// present or not, empty or not, and fields it skips (managed fields,
// owners, targetRef, topology) filled.
func randomSlice(r *rand.Rand) *discovery.EndpointSlice {
	pick := func(vals ...string) string { return vals[r.Intn(len(vals))] }
	maybe := func() bool { return r.Intn(2) == 0 }
	optStr := func(vals ...string) *string {
		if maybe() {
			return nil
		}
		return ptr.To(pick(vals...))
	}
	optBool := func() *bool {
		if maybe() {
			return nil
		}
		return ptr.To(maybe())
	}
	s := &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: pick("web-abc", ""), Namespace: pick("ns", ""), ResourceVersion: pick("12", ""),
			UID: "u", Generation: 3, Labels: map[string]string{}, Annotations: map[string]string{},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "m", FieldsV1: metav1.NewFieldsV1(`{"f:x":{}}`)}},
			OwnerReferences: []metav1.OwnerReference{{Name: "web", Kind: "Service", APIVersion: "v1", UID: "o"}},
		},
		AddressType: discovery.AddressType(pick("IPv4", "IPv6", "FQDN", "")),
	}
	for _, kv := range [][2]string{
		{LabelServiceName, pick("web", "")}, {LabelServiceProxyName, pick("other", "")},
		{LabelHeadless, ""}, {"app", "web"},
	} {
		if maybe() {
			s.Labels[kv[0]] = kv[1]
		}
	}
	for _, kv := range [][2]string{
		{AnnotationLastChangeTriggerTime, pick("2026-11-30T12:00:00.123456789Z", "2026-11-30T12:00:00Z", "not a time", "")},
		{metav1.InitialEventsAnnotationKey, pick("true", "false", "")}, {"other", "x"},
	} {
		if maybe() {
			s.Annotations[kv[0]] = kv[1]
		}
	}
	for range r.Intn(4) {
		s.Ports = append(s.Ports, discovery.EndpointPort{
			Name: optStr("http", ""), Protocol: (*v1.Protocol)(optStr("TCP", "UDP", "")),
			Port: map[bool]*int32{true: nil, false: ptr.To(int32(r.Intn(70000) - 1))}[maybe()], AppProtocol: optStr("h2c"),
		})
	}
	for range r.Intn(6) {
		e := discovery.Endpoint{
			Addresses:  []string{"10.0.0.1", "fd00::1", "10.0.0.2"}[:r.Intn(4)],
			Conditions: discovery.EndpointConditions{Ready: optBool(), Serving: optBool(), Terminating: optBool()},
			Hostname:   optStr("h"), NodeName: optStr("node-a", "node-b", ""), Zone: optStr("zone-1", ""),
			TargetRef:          &v1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "ns", UID: "pu"},
			DeprecatedTopology: map[string]string{"k": "v"},
		}
		if maybe() {
			e.Hints = &discovery.EndpointHints{}
			for range r.Intn(3) {
				e.Hints.ForZones = append(e.Hints.ForZones, discovery.ForZone{Name: pick("zone-1", "zone-2", "")})
			}
			for range r.Intn(3) {
				e.Hints.ForNodes = append(e.Hints.ForNodes, discovery.ForNode{Name: pick("node-a", "")})
			}
		}
		s.Endpoints = append(s.Endpoints, e)
	}
	return s
}

func TestDecodeEndpointSliceMatchesConvert(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var conv, wire Converter
	for i := range 3000 {
		s := randomSlice(r)
		b, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 { // fields this release does not know, to be skipped
			b = protowire.AppendTag(b, 99, protowire.BytesType)
			b = protowire.AppendString(b, "later")
			b = protowire.AppendTag(b, 100, protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, 7)
		}
		want := conv.EndpointSlice(s)
		got, err := wire.DecodeEndpointSlice(b)
		if err != nil {
			t.Fatalf("slice %d: %v", i, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("slice %d (%+v): the wire's copy differs from the converted one (-converted +wire):\n%s", i, s, diff)
		}
	}
}

// Fields repeated on the wire: the last scalar wins and messages merge,
// as the API types' decoding does.
func TestDecodeEndpointSliceMergesRepeatedFields(t *testing.T) {
	a := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{LabelServiceName: "one"}}, AddressType: "IPv4"}
	b := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: map[string]string{LabelServiceName: "two"}}, AddressType: "IPv6",
		Endpoints: []discovery.Endpoint{{Addresses: []string{"fd00::1"}}}}
	wa, _ := a.Marshal()
	wb, _ := b.Marshal()
	joined := append(wa, wb...)
	var decoded discovery.EndpointSlice
	if err := decoded.Unmarshal(joined); err != nil {
		t.Fatal(err)
	}
	var conv, wire Converter
	got, err := wire.DecodeEndpointSlice(joined)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(conv.EndpointSlice(&decoded), got); diff != "" {
		t.Fatalf("(-API type's decoding +wire):\n%s", diff)
	}
	// The API types write their non-pointer strings even when empty, so
	// b's empty name is the last one.
	if got.Name != "" || got.Namespace != "ns" || got.ServiceName != "two" || got.AddressType != "IPv6" {
		t.Fatalf("merge: %+v", got)
	}
}

func TestDecodeEndpointSliceRefusesBadInput(t *testing.T) {
	good, _ := (&discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Endpoints: []discovery.Endpoint{{Addresses: []string{"10.0.0.1"}, NodeName: ptr.To("n")}}}).Marshal()
	wrongType := protowire.AppendVarint(protowire.AppendTag(nil, 4, protowire.VarintType), 1) // addressType as a varint
	for name, b := range map[string][]byte{
		"truncated":       good[:len(good)-3],
		"wrong wire type": wrongType,
		"bad tag":         {0x00},
	} {
		var api discovery.EndpointSlice
		if api.Unmarshal(b) == nil {
			t.Errorf("%s: the API type decodes it; the case tests nothing", name)
		}
		if _, err := new(Converter).DecodeEndpointSlice(b); err == nil || !strings.HasPrefix(err.Error(), "EndpointSlice: ") {
			t.Errorf("%s: error %v, want an EndpointSlice error", name, err)
		}
	}
}

func TestEndpointSliceDeepCopyObject(t *testing.T) {
	s, _ := new(Converter).DecodeEndpointSlice(mustMarshal(randomSliceWith(t)))
	c := s.DeepCopyObject().(*EndpointSlice)
	if diff := cmp.Diff(s, c); diff != "" {
		t.Fatalf("copy differs:\n%s", diff)
	}
	*c.Ports[0].Port, c.Endpoints[0].Hints.ForZones[0], c.Endpoints[0].Address = 1, "changed", "changed"
	if *s.Ports[0].Port == 1 || s.Endpoints[0].Hints.ForZones[0] == "changed" || s.Endpoints[0].Address == "changed" {
		t.Fatal("the copy shares what it must not")
	}
}

func randomSliceWith(t *testing.T) *discovery.EndpointSlice {
	r := rand.New(rand.NewSource(7))
	for range 1000 {
		s := randomSlice(r)
		if len(s.Ports) > 0 && s.Ports[0].Port != nil && len(s.Endpoints) > 0 && s.Endpoints[0].Hints != nil && len(s.Endpoints[0].Hints.ForZones) > 0 {
			return s
		}
	}
	t.Fatal("no slice with a port and a zone hint")
	return nil
}

func mustMarshal(s *discovery.EndpointSlice) []byte {
	b, err := s.Marshal()
	if err != nil {
		panic(err)
	}
	return b
}

// largeSlice is one EndpointSlice of n endpoints as the controller
// writes them (addresses, conditions, node, zone, targetRef).
func largeSlice(n int) []byte {
	s := &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-x", Namespace: "ns", ResourceVersion: "9",
			Labels:      map[string]string{LabelServiceName: "web", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"},
			Annotations: map[string]string{AnnotationLastChangeTriggerTime: "2026-11-30T12:00:00Z"}},
		AddressType: "IPv4",
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(v1.ProtocolTCP), Port: ptr.To[int32](80)}},
	}
	for i := range n {
		s.Endpoints = append(s.Endpoints, discovery.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)},
			Conditions: discovery.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(fmt.Sprintf("node-%d", i%50)), Zone: ptr.To(fmt.Sprintf("zone-%d", i%3)),
			TargetRef: &v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: fmt.Sprintf("web-%d", i), UID: "0b3e9a4c-2f61-4f0e-9d53-6a1c2e8f7b10"},
		})
	}
	return mustMarshal(s)
}

// BenchmarkEndpointSliceDecode: a 10- and a 100-endpoint slice decoded into
// the API type and converted (what the informer did), and decoded straight
// into the copy.
func BenchmarkEndpointSliceDecode(b *testing.B) {
	for _, n := range []int{10, 100} {
		wire := largeSlice(n)
		b.Run(fmt.Sprintf("endpoints=%d/api-type-then-convert", n), func(b *testing.B) {
			var conv Converter
			b.ReportAllocs()
			for b.Loop() {
				var s discovery.EndpointSlice
				if err := s.Unmarshal(wire); err != nil {
					b.Fatal(err)
				}
				conv.EndpointSlice(&s)
			}
		})
		b.Run(fmt.Sprintf("endpoints=%d/straight", n), func(b *testing.B) {
			var conv Converter
			b.ReportAllocs()
			for b.Loop() {
				if _, err := conv.DecodeEndpointSlice(wire); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Decoders are pooled: copies made at once on several goroutines, each
// after others of other sizes, are still each its own slice's.
func TestDecodeEndpointSliceConcurrently(t *testing.T) {
	var wire Converter
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			r := rand.New(rand.NewSource(int64(10 + g)))
			for i := range 500 {
				s := randomSlice(r)
				got, err := wire.DecodeEndpointSlice(mustMarshal(s))
				if err == nil {
					if diff := cmp.Diff(new(Converter).EndpointSlice(s), got); diff != "" {
						err = fmt.Errorf("goroutine %d, slice %d (-converted +wire):\n%s", g, i, diff)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
