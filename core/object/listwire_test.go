package object_test

import (
	"math/rand"
	"strings"
	"testing"

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
	m := metav1.ListMeta{SelfLink: "/api/v1/services"}
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

// A list decoded from the wire is its metadata and, in order, each item
// as the item's own decoder (itself compared with the converter) makes it.
func TestDecodeListsMatchConvert(t *testing.T) {
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
		b, err := services.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		got, err := conv.DecodeServiceList(b)
		if err != nil {
			t.Fatalf("list %d: %v", i, err)
		}
		if diff := cmp.Diff(wantList(services.ListMeta, wantServices), got); diff != "" {
			t.Fatalf("Service list %d: (-converted +wire):\n%s", i, diff)
		}
		if b, err = slices.Marshal(); err != nil {
			t.Fatal(err)
		}
		gotSlices, err := conv.DecodeEndpointSliceList(b)
		if err != nil {
			t.Fatalf("slice list %d: %v", i, err)
		}
		if diff := cmp.Diff(wantList(slices.ListMeta, wantSlices), gotSlices); diff != "" {
			t.Fatalf("EndpointSlice list %d: (-converted +wire):\n%s", i, diff)
		}
	}
}

func TestDecodeListRefusesBadInput(t *testing.T) {
	good, _ := (&v1.ServiceList{Items: []v1.Service{{ObjectMeta: metav1.ObjectMeta{Name: "web"}}}}).Marshal()
	badItem := protowire.AppendTag(nil, 2, protowire.BytesType) // an item whose spec is a varint
	badItem = protowire.AppendBytes(badItem, protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 1))
	itemAsVarint := protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 1)
	for name, b := range map[string][]byte{"truncated": good[:len(good)-2], "bad item": badItem, "item as a varint": itemAsVarint} {
		var api v1.ServiceList
		if api.Unmarshal(b) == nil {
			t.Errorf("%s: the API type decodes it; the case tests nothing", name)
		}
		if _, err := new(Converter).DecodeServiceList(b); err == nil || !strings.HasPrefix(err.Error(), "ServiceList: ") {
			t.Errorf("%s: error %v, want a ServiceList error", name, err)
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
