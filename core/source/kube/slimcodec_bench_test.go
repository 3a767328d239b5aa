package kube

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/switchyard-proxy/switchyard/core/object"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/util/framer"
	"k8s.io/client-go/kubernetes/scheme"
	restwatch "k8s.io/client-go/rest/watch"
	"k8s.io/utils/ptr"
)

// controllerSlice is an EndpointSlice as the EndpointSlice controller
// writes it: ten endpoints with conditions, node, zone and a Pod
// reference, managed fields and an owner.
func controllerSlice(i int) *discovery.EndpointSlice {
	s := &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("svc-%d-abcde", i), ResourceVersion: fmt.Sprint(1000 + i),
			GenerateName: fmt.Sprintf("svc-%d-", i), UID: "3f0e6a52-93c1-4d7a-a8f1-0c2b9e4d7a10",
			Labels: map[string]string{object.LabelServiceName: fmt.Sprintf("svc-%d", i),
				"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"},
			Annotations:     map[string]string{object.AnnotationLastChangeTriggerTime: "2026-11-30T12:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: fmt.Sprintf("svc-%d", i), UID: "9d1c", Controller: ptr.To(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: "Update", APIVersion: "discovery.k8s.io/v1",
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:addressType":{},"f:endpoints":{},"f:metadata":{"f:labels":{}},"f:ports":{}}`)}},
		},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Protocol: ptr.To(v1.ProtocolTCP), Port: ptr.To[int32](8080)}},
	}
	for e := range 10 {
		s.Endpoints = append(s.Endpoints, discovery.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", i>>8&255, i&255, e)},
			Conditions: discovery.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(fmt.Sprintf("node-%d", (i+e)%100)), Zone: ptr.To(fmt.Sprintf("zone-%d", e%3)),
			TargetRef: &v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: fmt.Sprintf("svc-%d-7d9f8-%d", i, e), UID: "0b3e9a4c-2f61-4f0e-9d53-6a1c2e8f7b10"},
		})
	}
	return s
}

func benchService(i int) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("svc-%d", i), ResourceVersion: fmt.Sprint(i), UID: "c1",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: "Apply", FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:ports":{},"f:selector":{}}}`)}}},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIP: fmt.Sprintf("10.96.%d.%d", i>>8&255, i&255),
			ClusterIPs: []string{fmt.Sprintf("10.96.%d.%d", i>>8&255, i&255)}, IPFamilies: []v1.IPFamily{v1.IPv4Protocol},
			Selector: map[string]string{"app": fmt.Sprintf("svc-%d", i)}, SessionAffinity: v1.ServiceAffinityNone,
			Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}}},
	}
}

// watchStream is n events of each kind as kube-apiserver frames them.
func watchStream(b *testing.B, n int) (services, slices []byte) {
	frame := func(buf *bytes.Buffer, obj runtime.Object, gv schema.GroupVersion) {
		var raw bytes.Buffer
		if err := scheme.Codecs.EncoderForVersion(protobufSerializer(), gv).Encode(obj, &raw); err != nil {
			b.Fatal(err)
		}
		event, err := (&metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: raw.Bytes()}}).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		_, _ = framer.NewLengthDelimitedFrameWriter(buf).Write(event)
	}
	var sv, sl bytes.Buffer
	for i := range n {
		frame(&sv, benchService(i), v1.SchemeGroupVersion)
		frame(&sl, controllerSlice(i), discovery.SchemeGroupVersion)
	}
	return sv.Bytes(), sl.Bytes()
}

// decodeAll decodes stream as client-go's watch does with ns, and hands
// each object to keep.
func decodeAll(b *testing.B, ns runtime.NegotiatedSerializer, gv schema.GroupVersion, stream []byte, keep func(runtime.Object)) {
	objects, events, frames, err := runtime.NewClientNegotiator(ns, gv).StreamDecoder(runtime.ContentTypeProtobuf, nil)
	if err != nil {
		b.Fatal(err)
	}
	d := restwatch.NewDecoder(streaming.NewDecoder(frames.NewFrameReader(io.NopCloser(bytes.NewReader(stream))), events), objects)
	for {
		_, obj, err := d.Decode()
		if err == io.EOF {
			return
		}
		if err != nil {
			b.Fatal(err)
		}
		keep(obj)
	}
}

// BenchmarkWatchDecode: 1 000 Services and 1 000 ten-endpoint
// EndpointSlices, as a watch streams them, decoded by client-go and
// converted by the informers' transform, and decoded by the slim codec.
func BenchmarkWatchDecode(b *testing.B) {
	const n = 1000
	services, slices := watchStream(b, n)
	for _, kind := range []struct {
		name   string
		gv     schema.GroupVersion
		stream []byte
	}{{"services", v1.SchemeGroupVersion, services}, {"endpointslices", discovery.SchemeGroupVersion, slices}} {
		b.Run(kind.name+"/client-go-then-convert", func(b *testing.B) {
			var conv object.Converter
			b.ReportAllocs()
			for b.Loop() {
				decodeAll(b, scheme.Codecs.WithoutConversion(), kind.gv, kind.stream, func(o runtime.Object) { _, _ = conv.Convert(o) })
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		})
		b.Run(kind.name+"/slim", func(b *testing.B) {
			conv := new(object.Converter)
			ns := slimCodec{NegotiatedSerializer: scheme.Codecs.WithoutConversion(), conv: conv}
			b.ReportAllocs()
			for b.Loop() {
				decodeAll(b, ns, kind.gv, kind.stream, func(runtime.Object) {})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		})
	}
}

func protobufSerializer() runtime.Serializer {
	return protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
}

// BenchmarkListDecode: a list of 1 000 Services and one of 1 000
// ten-endpoint EndpointSlices, as kube-apiserver answers a list, decoded
// by client-go into the API's list and each item converted by the
// informers' transform, and read by the slim clients' list into a list
// of copies (object.Converter.ReadList). Both read a body already in
// memory: client-go's, in a list, reads the whole answer first.
func BenchmarkListDecode(b *testing.B) {
	const n = 1000
	services, slices := &v1.ServiceList{}, &discovery.EndpointSliceList{}
	for i := range n {
		services.Items = append(services.Items, *benchService(i))
		slices.Items = append(slices.Items, *controllerSlice(i))
	}
	for _, kind := range []struct {
		name string
		gv   schema.GroupVersion
		list runtime.Object
	}{{"services", v1.SchemeGroupVersion, services}, {"endpointslices", discovery.SchemeGroupVersion, slices}} {
		var body bytes.Buffer
		if err := scheme.Codecs.EncoderForVersion(protobufSerializer(), kind.gv).Encode(kind.list, &body); err != nil {
			b.Fatal(err)
		}
		clientGo, err := runtime.NewClientNegotiator(scheme.Codecs.WithoutConversion(), kind.gv).Decoder(runtime.ContentTypeProtobuf, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name string
			read func([]byte) (runtime.Object, error)
		}{
			{"client-go-then-convert", func(body []byte) (runtime.Object, error) {
				list, _, err := clientGo.Decode(body, nil, nil)
				return list, err
			}},
			{"slim", func(body []byte) (runtime.Object, error) {
				return new(object.Converter).ReadList(bytes.NewReader(body))
			}},
		} {
			b.Run(kind.name+"/"+c.name, func(b *testing.B) {
				var conv object.Converter
				b.ReportAllocs()
				for b.Loop() {
					list, err := c.read(body.Bytes())
					if err != nil {
						b.Fatal(err)
					}
					items, err := meta.ExtractListWithAlloc(list)
					if err != nil || len(items) != n {
						b.Fatalf("%d items, %v", len(items), err)
					}
					for _, o := range items {
						_, _ = conv.Convert(o)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
			})
		}
	}
}
