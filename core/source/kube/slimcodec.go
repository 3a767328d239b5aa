package kube

import (
	"bytes"
	"fmt"

	"github.com/switchyard-proxy/switchyard/core/object"
	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// slimCodec is the client's serializers with two changes for protobuf,
// the content type switchyard asks for: a Service or an EndpointSlice is
// decoded straight into the core's copy (object.Converter's DecodeService
// and DecodeEndpointSlice) instead of into the API type, and a watch
// event's envelopes are read in place instead of copied twice (what both
// cost before: docs/scale.md). Every other kind, list and content type
// decodes as client-go decodes it; the slim clients' lists are read by
// listCopies.
type slimCodec struct {
	runtime.NegotiatedSerializer
	conv *object.Converter
}

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
		out[i].Serializer = copySerializer{Serializer: info.Serializer, conv: c.conv}
		stream := *info.StreamSerializer
		stream.Serializer = watchEventSerializer{Serializer: stream.Serializer}
		out[i].StreamSerializer = &stream
	}
	return out
}

// copySerializer decodes a v1 Service and a discovery.k8s.io/v1
// EndpointSlice into the core's copies and hands everything else to
// client-go's serializer.
type copySerializer struct {
	runtime.Serializer
	conv *object.Converter
}

var (
	serviceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
	sliceGVK   = sliceGV.WithKind("EndpointSlice")
)

func (s copySerializer) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into != nil || !bytes.HasPrefix(data, object.ProtobufMagic) {
		return s.Serializer.Decode(data, defaults, into)
	}
	env, err := readUnknown(data[len(object.ProtobufMagic):])
	if err != nil || env.encoding != "" {
		return s.Serializer.Decode(data, defaults, into)
	}
	var obj runtime.Object
	var gvk schema.GroupVersionKind
	switch {
	case env.kind == serviceGVK.Kind && env.apiVersion == serviceGVK.GroupVersion().String():
		obj, err = s.conv.DecodeService(env.raw)
		gvk = serviceGVK
	case env.kind == sliceGVK.Kind && env.apiVersion == sliceGV.String():
		obj, err = s.conv.DecodeEndpointSlice(env.raw)
		gvk = sliceGVK
	default:
		return s.Serializer.Decode(data, defaults, into)
	}
	if err != nil {
		return nil, nil, err
	}
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
