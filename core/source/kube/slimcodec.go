package kube

import (
	"bytes"
	"context"
	"fmt"

	"github.com/switchyard-proxy/switchyard/core/object"
	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// slimCodec is the client's serializers with two changes for protobuf,
// the content type switchyard asks for: an EndpointSlice is decoded
// straight into the core's copy (object.Converter.DecodeEndpointSlice)
// instead of into the API type, and a watch event's envelopes are read in
// place instead of copied twice. At 30k Services these were 45% of what
// switchyard allocated until its first sync (docs/scale.md). Every other
// kind, list and content type decodes as client-go decodes it.
type slimCodec struct {
	runtime.NegotiatedSerializer
	conv *object.Converter
}

// protobufMagic starts every protobuf-encoded object the API server sends
// (runtime.Unknown after it); k8s.io/apimachinery's protobuf serializer.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

const protobufMediaType = runtime.ContentTypeProtobuf

var sliceGV = schema.GroupVersion{Group: "discovery.k8s.io", Version: "v1"}

func (c slimCodec) SupportedMediaTypes() []runtime.SerializerInfo {
	infos := c.NegotiatedSerializer.SupportedMediaTypes()
	out := make([]runtime.SerializerInfo, len(infos))
	for i, info := range infos {
		out[i] = info
		if info.MediaType != protobufMediaType || info.StreamSerializer == nil {
			continue
		}
		out[i].Serializer = sliceSerializer{Serializer: info.Serializer, conv: c.conv}
		stream := *info.StreamSerializer
		stream.Serializer = watchEventSerializer{Serializer: stream.Serializer}
		out[i].StreamSerializer = &stream
	}
	return out
}

// sliceSerializer decodes a discovery.k8s.io/v1 EndpointSlice into the
// core's copy and hands everything else to client-go's serializer.
type sliceSerializer struct {
	runtime.Serializer
	conv *object.Converter
}

func (s sliceSerializer) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into != nil || !bytes.HasPrefix(data, protobufMagic) {
		return s.Serializer.Decode(data, defaults, into)
	}
	env, err := readUnknown(data[len(protobufMagic):])
	if err != nil || env.encoding != "" || env.kind != "EndpointSlice" || env.apiVersion != sliceGV.String() {
		return s.Serializer.Decode(data, defaults, into)
	}
	obj, err := s.conv.DecodeEndpointSlice(env.raw)
	if err != nil {
		return nil, nil, err
	}
	gvk := sliceGV.WithKind("EndpointSlice")
	return obj, &gvk, nil
}

// unknown is runtime.Unknown's fields, read in place.
type unknown struct {
	apiVersion, kind, encoding string
	raw                        []byte
}

// readUnknown reads runtime.Unknown (typeMeta 1: apiVersion 1, kind 2;
// raw 2; contentEncoding 3) without copying raw.
func readUnknown(b []byte) (unknown, error) {
	var u unknown
	err := messageFields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			return messageFields(v, func(n protowire.Number, w []byte) error {
				switch n {
				case 1:
					u.apiVersion = string(w)
				case 2:
					u.kind = string(w)
				}
				return nil
			})
		case 2:
			u.raw = v
		case 3:
			u.encoding = string(v)
		}
		return nil
	})
	return u, err
}

// watchEventSerializer decodes a metav1.WatchEvent (type 1; object 2, a
// RawExtension: raw 1) leaving the event's object in the frame it came in.
// Contract (client-go v0.36's rest/watch.Decoder): the event's object is
// decoded before the stream reads its next frame, and nothing keeps the
// raw bytes; TestWatchThroughTheSlimCodec reads events one after another.
type watchEventSerializer struct {
	runtime.Serializer
}

func (s watchEventSerializer) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	event, ok := into.(*metav1.WatchEvent)
	if !ok {
		return s.Serializer.Decode(data, defaults, into)
	}
	*event = metav1.WatchEvent{}
	err := messageFields(data, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			event.Type = string(v)
		case 2:
			return messageFields(v, func(n protowire.Number, w []byte) error {
				if n == 1 {
					event.Object.Raw = w
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("watch event: %w", err)
	}
	return event, nil, nil
}

// messageFields calls each with the number and bytes of every
// length-delimited field of the message b, skipping the others.
func messageFields(b []byte, each func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := each(num, v); err != nil {
			return err
		}
	}
	return nil
}

// slimSliceClient is a discovery/v1 client for cfg whose EndpointSlices
// arrive as the core's copies (*object.EndpointSlice) when the API server
// answers in protobuf; lists still arrive as API types (the informer's
// transform converts them).
func slimSliceClient(cfg *rest.Config, conv *object.Converter) (*discoveryclient.DiscoveryV1Client, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &sliceGV
	c.APIPath = "/apis"
	c.NegotiatedSerializer = slimCodec{NegotiatedSerializer: scheme.Codecs.WithoutConversion(), conv: conv}
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("EndpointSlice client: %w", err)
	}
	return discoveryclient.New(rc), nil
}

// newSliceInformer is client-go's EndpointSlice informer over slices,
// with the copy as its example object (the reflector drops watch events
// of another type).
func newSliceInformer(slices discoveryclient.EndpointSlicesGetter, tweak func(*metav1.ListOptions), indexers cache.Indexers) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			return slices.EndpointSlices(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return slices.EndpointSlices(metav1.NamespaceAll).Watch(ctx, o)
		},
	}
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, slices),
		&object.EndpointSlice{}, cache.SharedIndexInformerOptions{Indexers: indexers})
}
