package object

import (
	"fmt"
	"sync"
	"time"

	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"google.golang.org/protobuf/encoding/protowire"
)

// DecodeEndpointSlice makes the core's copy of a discovery.k8s.io/v1
// EndpointSlice straight from its protobuf encoding (the message inside
// the API server's runtime.Unknown envelope), without making the API
// object first, which the transform would convert and drop (what that
// cost: docs/scale.md). The copy is exactly what EndpointSlice would make of
// the decoded object (TestDecodeEndpointSliceMatchesConvert compares them
// over random slices), keeping in addition whether the object carries the
// initial-events-end annotation (a WatchList bookmark). Unknown fields are
// skipped, as protobuf decoding does; a field of the wrong wire type or a
// truncated message is an error.
func (c *Converter) DecodeEndpointSlice(b []byte) (*EndpointSlice, error) {
	d := sliceDecoders.Get().(*sliceDecoder)
	defer d.release()
	if err := d.slice(b); err != nil {
		return nil, fmt.Errorf("EndpointSlice: %w", err)
	}
	return d.copy(c), nil
}

// sliceDecoders keeps decoders for reuse: the endpoints' scratch list
// was the largest thing decoding allocated, and it is dropped as soon as
// the copy is made.
var sliceDecoders = sync.Pool{New: func() any { return new(sliceDecoder) }}

// release forgets what d read (its byte slices alias the message) and
// returns it to the pool, keeping the endpoints list's room.
func (d *sliceDecoder) release() {
	endpoints := d.endpoints[:cap(d.endpoints)]
	clear(endpoints)
	*d = sliceDecoder{endpoints: endpoints[:0]}
	sliceDecoders.Put(d)
}

// sliceDecoder holds what the wire said, with the presence protobuf's
// optional fields have (the API types' pointers), until the copy is made.
type sliceDecoder struct {
	meta                   Meta
	serviceName, proxyName string
	hasProxyName, headless bool
	trigger                string
	hasTrigger, initialEnd bool
	addressType            discovery.AddressType
	ports                  []EndpointPort
	endpoints              []wireEndpoint
}

// wireEndpoint's byte slices alias the message being decoded.
type wireEndpoint struct {
	address                     string
	addresses                   int
	nodeName, zone              []byte
	hasNodeName, hasZone        bool
	ready, serving, terminating optionalBool
	forZones, forNodes          [][]byte
}

// optionalBool is a protobuf optional bool: unset, false or true.
type optionalBool uint8

const (
	unset optionalBool = iota
	isFalse
	isTrue
)

func (d *sliceDecoder) slice(b []byte) error {
	if err := d.reserve(b); err != nil {
		return err
	}
	return fields(b, sliceMessage, func(num protowire.Number, _ uint64, v []byte) error {
		switch num {
		case 1:
			return objectMeta(v, &d.meta, d.label, d.annotation)
		case 2:
			d.endpoints = append(d.endpoints, wireEndpoint{})
			return d.endpoints[len(d.endpoints)-1].decode(v)
		case 3:
			d.ports = append(d.ports, EndpointPort{})
			return decodePort(&d.ports[len(d.ports)-1], v)
		case 4:
			d.addressType = oneOf(v, addressTypes)
		}
		return nil
	})
}

// What the decoder reads of an EndpointSlice (metadata 1, endpoints 2,
// ports 3, addressType 4) and of the messages inside it, by field number
// (k8s.io/api's generated.proto).
var (
	sliceMessage    = reads(nums(1, 2, 3, 4), nil)
	reservedLists   = reads(nums(2, 3), nil) // what reserve counts
	endpointMessage = reads(nums(1, 2, 6, 7, 8), nil)
	// ready, serving, terminating.
	conditionsMessage = reads(nil, nums(1, 2, 3))
	// forZones, forNodes; each a message whose name is field 1.
	hintsMessage     = reads(nums(1, 2), nil)
	hintMessage      = reads(nums(1), nil)
	slicePortMessage = reads(nums(1, 2), nums(3))
)

// The address types the API defines (oneOf).
var addressTypes = []discovery.AddressType{discovery.AddressTypeIPv4, discovery.AddressTypeIPv6, discovery.AddressTypeFQDN}

// reserve sizes the endpoint and port lists from a first pass over the
// message's tags: growing them by appending was most of what decoding a
// large slice allocated.
func (d *sliceDecoder) reserve(b []byte) error {
	var endpoints, ports int
	err := fields(b, reservedLists, func(num protowire.Number, _ uint64, _ []byte) error {
		switch num {
		case 2:
			endpoints++
		case 3:
			ports++
		}
		return nil
	})
	if cap(d.endpoints) < endpoints {
		d.endpoints = make([]wireEndpoint, 0, endpoints)
	}
	// The ports become the copy's: never the pool's.
	if ports > 0 {
		d.ports = make([]EndpointPort, 0, ports)
	}
	return err
}

// label keeps the labels the copy reads; later entries win, as in a map.
func (d *sliceDecoder) label(k, v []byte) {
	switch string(k) {
	case LabelServiceName:
		d.serviceName = string(v)
	case LabelServiceProxyName:
		d.proxyName, d.hasProxyName = string(v), true
	case LabelHeadless:
		d.headless = true
	}
}

func (d *sliceDecoder) annotation(k, v []byte) {
	switch string(k) {
	case AnnotationLastChangeTriggerTime:
		d.trigger, d.hasTrigger = string(v), true
	case metav1.InitialEventsAnnotationKey:
		d.initialEnd = string(v) == "true"
	}
}

func decodePort(p *EndpointPort, b []byte) error {
	return fields(b, slicePortMessage, func(num protowire.Number, x uint64, v []byte) error {
		switch num {
		case 1:
			s := string(v)
			p.Name = &s
		case 2:
			proto := oneOf(v, protocols)
			p.Protocol = &proto
		case 3:
			port := int32(x)
			p.Port = &port
		}
		return nil
	})
}

func (e *wireEndpoint) decode(b []byte) error {
	return fields(b, endpointMessage, func(num protowire.Number, _ uint64, v []byte) error {
		switch num {
		case 1:
			if e.addresses == 0 {
				e.address = string(v)
			}
			e.addresses++
		case 2:
			return e.conditions(v)
		case 6:
			e.nodeName, e.hasNodeName = v, true
		case 7:
			e.zone, e.hasZone = v, true
		case 8:
			return e.hints(v)
		}
		return nil
	})
}

func (e *wireEndpoint) conditions(b []byte) error {
	return fields(b, conditionsMessage, func(num protowire.Number, x uint64, _ []byte) error {
		set := isFalse
		if x != 0 {
			set = isTrue
		}
		switch num {
		case 1:
			e.ready = set
		case 2:
			e.serving = set
		case 3:
			e.terminating = set
		}
		return nil
	})
}

// hints keeps the names of the ForZone (1) and ForNode (2) messages.
func (e *wireEndpoint) hints(b []byte) error {
	return fields(b, hintsMessage, func(num protowire.Number, _ uint64, v []byte) error {
		name := []byte{}
		err := fields(v, hintMessage, func(_ protowire.Number, _ uint64, w []byte) error {
			name = w
			return nil
		})
		if num == 1 {
			e.forZones = append(e.forZones, name)
		} else {
			e.forNodes = append(e.forNodes, name)
		}
		return err
	})
}

// copy makes the copy EndpointSlice makes of the same object.
func (d *sliceDecoder) copy(c *Converter) *EndpointSlice {
	out := &EndpointSlice{
		Meta:             d.meta,
		ServiceName:      d.serviceName,
		ProxyName:        d.proxyName,
		HasProxyName:     d.hasProxyName,
		Headless:         d.headless,
		AddressType:      d.addressType,
		Ports:            d.ports,
		InitialEventsEnd: d.initialEnd,
	}
	if d.hasTrigger {
		if at, err := time.Parse(time.RFC3339Nano, d.trigger); err == nil {
			out.TriggerTime = at
		}
	}
	if len(d.endpoints) == 0 {
		return out
	}
	out.Endpoints = make([]Endpoint, len(d.endpoints))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range d.endpoints {
		e := &d.endpoints[i]
		ep := &out.Endpoints[i]
		ep.Address, ep.NoAddress = e.address, e.addresses == 0
		if e.hasNodeName || e.hasZone {
			ep.Where = c.where(Where{NodeName: c.internBytes(e.nodeName), Zone: c.internBytes(e.zone)})
		}
		ep.Ready = e.ready != isFalse
		ep.Serving = e.serving != isFalse
		ep.Terminating = e.terminating == isTrue
		if len(e.forZones) > 0 || len(e.forNodes) > 0 {
			ep.Hints = &Hints{}
			for _, z := range e.forZones {
				ep.Hints.ForZones = append(ep.Hints.ForZones, c.internBytes(z))
			}
			for _, n := range e.forNodes {
				ep.Hints.ForNodes = append(ep.Hints.ForNodes, c.internBytes(n))
			}
		}
	}
	return out
}
