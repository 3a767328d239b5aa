package object

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
)

// ProtobufMagic starts every protobuf-encoded answer of the API server
// (runtime.Unknown after it): k8s.io/apimachinery's protobuf serializer.
var ProtobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// ReadList reads a list answer in protobuf from r (ProtobufMagic, then
// runtime.Unknown: typeMeta 1, raw 2, contentEncoding 3) whose raw is a
// v1 ServiceList or a discovery.k8s.io/v1 EndpointSliceList, decoding
// each item into its copy (DecodeService, DecodeEndpointSlice) as soon as
// it has been read: only one item's bytes are held at a time, where
// reading the answer whole held all of it, and more while it grew
// (docs/scale.md, "Lists decoded straight into the copies"). Another
// kind, a content encoding, an item the decoders refuse, a field longer
// than maxWireField or a truncated answer is an error.
func (c *Converter) ReadList(r io.Reader) (*List, error) {
	s := &wireStream{r: bufio.NewReaderSize(r, 64<<10)}
	magic := make([]byte, len(ProtobufMagic))
	if _, err := io.ReadFull(s.r, magic); err != nil || !bytes.Equal(magic, ProtobufMagic) {
		return nil, fmt.Errorf("list: not protobuf (%q, %v)", magic, err)
	}
	var kind string
	var list *List
	for {
		num, typ, err := s.tag()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
		switch {
		case num == 1 && typ == protowire.BytesType:
			kind, err = s.typeMeta()
		case num == 2 && typ == protowire.BytesType:
			list, err = s.list(c, kind)
		case num == 3 && typ == protowire.BytesType:
			var encoding []byte
			if encoding, err = s.bytes(); err == nil && len(encoding) > 0 {
				err = fmt.Errorf("content encoding %q", encoding)
			}
		default:
			err = s.skip(num, typ)
		}
		if err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
	}
	if list == nil {
		return nil, errors.New("list: no list in the answer")
	}
	return list, nil
}

// maxWireField bounds one field read whole (an item, the metadata): the
// API server stores no object near it (etcd's default request limit is
// 1.5 MiB).
const maxWireField = 64 << 20

// wireStream reads protobuf fields from a stream, counting the bytes it
// consumed; buf is reused for every field read whole.
type wireStream struct {
	r   *bufio.Reader
	off int64
	buf []byte
}

func (s *wireStream) ReadByte() (byte, error) {
	b, err := s.r.ReadByte()
	if err == nil {
		s.off++
	}
	return b, err
}

// tag reads a field's tag; io.EOF only before its first byte
// (binary.ReadUvarint's contract).
func (s *wireStream) tag() (protowire.Number, protowire.Type, error) {
	v, err := binary.ReadUvarint(s)
	if err != nil {
		return 0, 0, err
	}
	num, typ := protowire.DecodeTag(v)
	if num < protowire.MinValidNumber {
		return 0, 0, fmt.Errorf("bad field number %d", num)
	}
	return num, typ, nil
}

// length reads a length-delimited field's length.
func (s *wireStream) length() (int64, error) {
	n, err := binary.ReadUvarint(s)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && n > maxWireField {
		err = fmt.Errorf("a field of %d bytes", n)
	}
	return int64(n), err
}

// bytes reads a length-delimited field's value into buf; it is valid
// until the next read.
func (s *wireStream) bytes() ([]byte, error) {
	n, err := s.length()
	if err != nil {
		return nil, err
	}
	s.buf = slices.Grow(s.buf[:0], int(n))[:n]
	read, err := io.ReadFull(s.r, s.buf)
	s.off += int64(read)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return s.buf, err
}

// skip reads past a field of another number or wire type.
func (s *wireStream) skip(num protowire.Number, typ protowire.Type) error {
	var err error
	switch typ {
	case protowire.VarintType:
		_, err = binary.ReadUvarint(s)
	case protowire.Fixed32Type, protowire.Fixed64Type:
		n := int64(4)
		if typ == protowire.Fixed64Type {
			n = 8
		}
		var skipped int64
		skipped, err = io.CopyN(io.Discard, s.r, n)
		s.off += skipped
	case protowire.BytesType:
		_, err = s.bytes()
	default:
		err = fmt.Errorf("field %d: wire type %d", num, typ)
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// typeMeta reads runtime.TypeMeta (apiVersion 1, kind 2) and names the
// list kinds ReadList decodes; any other is an error.
func (s *wireStream) typeMeta() (string, error) {
	b, err := s.bytes()
	if err != nil {
		return "", err
	}
	var apiVersion, kind string
	err = fields(b, typeMetaMessage, func(num protowire.Number, _ uint64, v []byte) error {
		if num == 1 {
			apiVersion = string(v)
		} else {
			kind = string(v)
		}
		return nil
	})
	switch {
	case err != nil:
		return "", err
	case apiVersion == "v1" && kind == "ServiceList", apiVersion == "discovery.k8s.io/v1" && kind == "EndpointSliceList":
		return kind, nil
	}
	return "", fmt.Errorf("%s %s is not a list of Services or EndpointSlices", apiVersion, kind)
}

var typeMetaMessage = reads(nums(1, 2), nil)

// list reads the list message (metadata 1, items 2) of kind, decoding
// each item as it is read.
func (s *wireStream) list(c *Converter, kind string) (*List, error) {
	var item func([]byte) (runtime.Object, error)
	switch kind {
	case "ServiceList":
		item = func(b []byte) (runtime.Object, error) { return c.DecodeService(b) }
	case "EndpointSliceList":
		item = func(b []byte) (runtime.Object, error) { return c.DecodeEndpointSlice(b) }
	default:
		return nil, errors.New("a list before its kind")
	}
	n, err := binary.ReadUvarint(s)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	l, end := &List{}, s.off+int64(n)
	for s.off < end && err == nil {
		var num protowire.Number
		var typ protowire.Type
		if num, typ, err = s.tag(); err != nil {
			break
		}
		err = s.listField(l, num, typ, item)
	}
	if err == nil && s.off != end {
		err = errors.New("a field past the list's end")
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	return l, nil
}

func (s *wireStream) listField(l *List, num protowire.Number, typ protowire.Type, item func([]byte) (runtime.Object, error)) error {
	want, read := listMessage.wireType(num)
	if !read {
		return s.skip(num, typ)
	}
	if typ != want {
		return fmt.Errorf("field %d: %w", num, errWireType)
	}
	b, err := s.bytes()
	if err != nil {
		return err
	}
	if num == 1 {
		return fields(b, listMetaMessage, l.meta)
	}
	obj, err := item(b)
	if err != nil {
		return fmt.Errorf("item %d: %w", len(l.Items), err)
	}
	l.Items = append(l.Items, obj)
	return nil
}
