package object_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	. "github.com/switchyard-proxy/switchyard/core/object"
)

// randomListMeta fills each field of a list's metadata or not.
func randomListMeta(r *rand.Rand) metav1.ListMeta {
	var m metav1.ListMeta
	if r.Intn(2) == 0 {
		m.ResourceVersion = "1234"
	}
	if r.Intn(2) == 0 {
		m.Continue = "token"
	}
	if r.Intn(2) == 0 {
		m.RemainingItemCount = ptr.To(int64(r.Intn(3)))
	}
	return m
}

func wantList(m metav1.ListMeta, items []runtime.Object) *List {
	return &List{ResourceVersion: m.ResourceVersion, Continue: m.Continue, RemainingItemCount: m.RemainingItemCount, Items: items}
}

// answer is list as the API server sends it in protobuf: the magic, then
// runtime.Unknown holding the list, with fields after its items this
// release does not know.
func answer(t *testing.T, apiVersion, kind string, list interface{ Marshal() ([]byte, error) }) []byte {
	raw, err := list.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	raw = protowire.AppendString(protowire.AppendTag(raw, 99, protowire.BytesType), "later")
	raw = protowire.AppendFixed64(protowire.AppendTag(raw, 100, protowire.Fixed64Type), 7)
	raw = protowire.AppendVarint(protowire.AppendTag(raw, 101, protowire.VarintType), 300)
	u, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(slices.Clone(ProtobufMagic), u...)
}

// A list read from the wire is its metadata and, in order, each item as
// the item's own decoder (itself compared with the converter) makes it,
// read whole or a byte at a time.
func TestReadListMatchesConvert(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	var conv Converter
	for i := range 200 {
		services := &v1.ServiceList{ListMeta: randomListMeta(r)}
		slices := &discovery.EndpointSliceList{ListMeta: randomListMeta(r)}
		var wantServices, wantSlices []runtime.Object
		for range r.Intn(20) {
			s := randomService(r)
			services.Items, wantServices = append(services.Items, *s), append(wantServices, conv.Service(s))
		}
		for range r.Intn(20) {
			s := randomSlice(r)
			slices.Items, wantSlices = append(slices.Items, *s), append(wantSlices, conv.EndpointSlice(s))
		}
		for _, c := range []struct {
			answer []byte
			want   *List
		}{
			{answer(t, "v1", "ServiceList", services), wantList(services.ListMeta, wantServices)},
			{answer(t, "discovery.k8s.io/v1", "EndpointSliceList", slices), wantList(slices.ListMeta, wantSlices)},
		} {
			var in io.Reader = bytes.NewReader(c.answer)
			if i%2 == 0 {
				in = iotest.OneByteReader(in)
			}
			got, err := conv.ReadList(in)
			if err != nil {
				t.Fatalf("list %d: %v", i, err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("list %d: (-converted +read):\n%s", i, diff)
			}
		}
	}
}

func TestReadListRefusesBadInput(t *testing.T) {
	one := &v1.ServiceList{Items: []v1.Service{{ObjectMeta: metav1.ObjectMeta{Name: "web"}}}}
	good := answer(t, "v1", "ServiceList", one)
	badItem := protowire.AppendTag(nil, 2, protowire.BytesType) // an item whose spec is a varint
	badItem = protowire.AppendBytes(badItem, protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 1))
	envelope := func(u runtime.Unknown) []byte {
		b, _ := u.Marshal()
		return append(slices.Clone(ProtobufMagic), b...)
	}
	listOf := runtime.TypeMeta{APIVersion: "v1", Kind: "ServiceList"}
	raw, _ := one.Marshal()
	huge := append(slices.Clone(ProtobufMagic), protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.BytesType), 1<<40)...)
	tm, _ := (&listOf).Marshal()
	short := protowire.AppendBytes(protowire.AppendTag(slices.Clone(ProtobufMagic), 1, protowire.BytesType), tm)
	short = protowire.AppendVarint(protowire.AppendTag(short, 2, protowire.BytesType), uint64(len(raw)-1)) // its last item overruns it
	short = append(short, raw...)
	cases := map[string][]byte{
		"a list shorter than its items": short,
		"JSON":                          []byte(`{"kind":"ServiceList"}`),
		"another kind":                  answer(t, "v1", "PodList", &v1.PodList{}),
		"a bad item":                    envelope(runtime.Unknown{TypeMeta: listOf, Raw: badItem}),
		"content encoding":              envelope(runtime.Unknown{TypeMeta: listOf, Raw: raw, ContentEncoding: "gzip"}),
		"no list":                       ProtobufMagic,
		"a huge field":                  huge,
	}
	for n := len(ProtobufMagic) + 1; n < len(good); n++ {
		// Cut between the envelope's last fields (contentEncoding and
		// contentType, two empty ones after the list), the answer is a
		// whole message without them: protobuf marks no end.
		if n != len(good)-4 && n != len(good)-2 {
			cases[fmt.Sprintf("cut at %d of %d", n, len(good))] = good[:n]
		}
	}
	for name, b := range cases {
		if l, err := new(Converter).ReadList(bytes.NewReader(b)); err == nil || !strings.HasPrefix(err.Error(), "list: ") {
			t.Errorf("%s: %v, error %v; want a list error", name, l, err)
		}
	}
}

// What client-go's reflector and pager do with a list: read its metadata
// (meta.ListAccessor), take its items (meta.ExtractListWithAlloc), and
// join pages (meta.SetList, then clear the continue token and count).
func TestListIsWhatTheReflectorReads(t *testing.T) {
	web := &Service{Meta: Meta{Namespace: "ns", Name: "web"}, Ports: []ServicePort{{Port: 80}}}
	l := &List{ResourceVersion: "7", Continue: "more", RemainingItemCount: ptr.To(int64(1)), Items: []runtime.Object{web}}
	acc, err := meta.ListAccessor(l)
	if err != nil || acc.GetResourceVersion() != "7" || acc.GetContinue() != "more" || *acc.GetRemainingItemCount() != 1 {
		t.Fatalf("list accessor: %v, %v", acc, err)
	}
	items, err := meta.ExtractListWithAlloc(l)
	if err != nil || len(items) != 1 || items[0] != web {
		t.Fatalf("extracted %v, %v; want the item itself", items, err)
	}
	dns := &Service{Meta: Meta{Namespace: "ns", Name: "dns"}}
	if err := meta.SetList(l, append(items, dns)); err != nil {
		t.Fatal(err)
	}
	acc.SetContinue("")
	acc.SetRemainingItemCount(nil)
	want := &List{ResourceVersion: "7", Items: []runtime.Object{web, dns}}
	if diff := cmp.Diff(want, l); diff != "" {
		t.Fatalf("joined pages (-want +got):\n%s", diff)
	}
	c := l.DeepCopyObject().(*List)
	if diff := cmp.Diff(l, c); diff != "" {
		t.Fatalf("copy differs:\n%s", diff)
	}
	c.Items[0].(*Service).Ports[0].Port = -1
	if web.Ports[0].Port == -1 {
		t.Fatal("the copy shares its items")
	}
}
