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

// fields calls each for every field of the message b, with the field's
// bytes when it is length-delimited and its value when it is a varint.
func fields(b []byte, each func(num protowire.Number, typ protowire.Type, v uint64, bytes []byte) error) error {
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
		if err := each(num, typ, v, bytes); err != nil {
			return fmt.Errorf("field %d: %w", num, err)
		}
	}
	return nil
}

// objectMeta reads an ObjectMeta's name (1), namespace (3) and resource
// version (6) into m, and hands each label (11) and annotation (12) entry
// to label and annotation, in wire order (a later entry wins, as in a map).
func objectMeta(b []byte, m *Meta, label, annotation func(k, v []byte)) error {
	return fields(b, func(num protowire.Number, typ protowire.Type, _ uint64, v []byte) error {
		switch num {
		case 1, 3, 6, 11, 12:
		default:
			return nil
		}
		if typ != protowire.BytesType {
			return errWireType
		}
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

// mapEntry decodes one protobuf map entry (key 1, value 2, either absent
// meaning empty).
func mapEntry(b []byte, set func(k, v []byte)) error {
	var key, value []byte
	err := fields(b, func(num protowire.Number, typ protowire.Type, _ uint64, v []byte) error {
		if num != 1 && num != 2 {
			return nil
		}
		if typ != protowire.BytesType {
			return errWireType
		}
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
