package object

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// The protobuf wire, read in place: what DecodeService and
// DecodeEndpointSlice share (google.golang.org/protobuf's protowire
// reads tags and values; the field numbers are k8s.io/api's
// generated.proto).

// errWireType is a known field sent with another wire type than its own.
var errWireType = errors.New("wrong wire type")

// message is what a decoder reads of one protobuf message: its fields'
// numbers (below 64), each with the wire type the field is declared with.
// Other fields are skipped, as protobuf decoding skips unknown ones.
type message struct{ bytes, varints uint64 }

// reads declares a message's read fields: those length-delimited
// (strings, bytes, messages, maps) and those sent as varints (integers,
// bools, enums). A number outside 1-63, or one given twice, is a mistake
// in the declaration: it panics, when the package's variables are made.
func reads(bytes []protowire.Number, varints []protowire.Number) message {
	var m message
	for _, n := range bytes {
		m.bytes |= bitOf(n, m)
	}
	for _, n := range varints {
		m.varints |= bitOf(n, m)
	}
	return m
}

func bitOf(n protowire.Number, declared message) uint64 {
	if n < 1 || n > 63 {
		panic(fmt.Sprintf("field number %d: the decoders read fields 1-63", n))
	}
	bit := uint64(1) << n
	if (declared.bytes|declared.varints)&bit != 0 {
		panic(fmt.Sprintf("field %d declared twice", n))
	}
	return bit
}

// wireType says whether m reads field num, and with which wire type.
func (m message) wireType(num protowire.Number) (protowire.Type, bool) {
	if uint32(num) >= 64 {
		return 0, false
	}
	bit := uint64(1) << (uint32(num) & 63)
	if m.bytes&bit != 0 {
		return protowire.BytesType, true
	}
	return protowire.VarintType, m.varints&bit != 0
}

// fields calls each for every field of b that m reads, in wire order,
// with its bytes when it is length-delimited and its value when it is a
// varint. A read field sent with another wire type is errWireType.
func fields(b []byte, m message, each func(num protowire.Number, v uint64, bytes []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v uint64
		var bytes []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			bytes, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		want, read := m.wireType(num)
		if !read {
			continue
		}
		if typ != want {
			return fmt.Errorf("field %d: %w", num, errWireType)
		}
		if err := each(num, v, bytes); err != nil {
			return fmt.Errorf("field %d: %w", num, err)
		}
	}
	return nil
}

// nums is a list of field numbers, for reads.
func nums(n ...protowire.Number) []protowire.Number { return n }

// objectMeta reads an ObjectMeta's name (1), namespace (3) and resource
// version (6) into m, and hands each label (11) and annotation (12) entry
// to label and annotation, in wire order (a later entry wins, as in a map).
func objectMeta(b []byte, m *Meta, label, annotation func(k, v []byte)) error {
	return fields(b, objectMetaMessage, func(num protowire.Number, _ uint64, v []byte) error {
		switch num {
		case 1:
			m.Name = string(v)
		case 3:
			m.Namespace = string(v)
		case 6:
			m.ResourceVersion = string(v)
		case 11:
			return mapEntry(v, label)
		case 12:
			return mapEntry(v, annotation)
		}
		return nil
	})
}

var objectMetaMessage = reads(nums(1, 3, 6, 11, 12), nil)

// mapEntry decodes one protobuf map entry (key 1, value 2, either absent
// meaning empty).
func mapEntry(b []byte, set func(k, v []byte)) error {
	var key, value []byte
	err := fields(b, mapEntryMessage, func(num protowire.Number, _ uint64, v []byte) error {
		if num == 1 {
			key = v
		} else {
			value = v
		}
		return nil
	})
	if err == nil {
		set(key, value)
	}
	return err
}

var mapEntryMessage = reads(nums(1, 2), nil)
