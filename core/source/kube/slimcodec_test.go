package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/framer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// apiServer answers Service and EndpointSlice lists and watches in
// protobuf, as kube-apiserver does: a watch is length-delimited WatchEvent
// frames whose objects are runtime.Unknown envelopes.
type apiServer struct {
	services []*v1.Service
	slices   []*discovery.EndpointSlice
	// refuseWatchList answers a WatchList request with an error, as an
	// API server without WatchList does, so the client lists instead.
	refuseWatchList bool
	// pageSize > 0 answers a list asking for pages (a limit) with pages
	// of at most pageSize items, as an API server serving lists from etcd
	// may answer with fewer items than the limit.
	pageSize int
	// jsonLists answers lists in JSON, as an API server answers a client
	// that does not ask for protobuf.
	jsonLists bool
	mu        sync.Mutex
	requests  []string
}

func encode(t *testing.T, obj runtime.Object, gv schema.GroupVersion) []byte {
	enc := scheme.Codecs.EncoderForVersion(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), gv)
	var b bytes.Buffer
	if err := enc.Encode(obj, &b); err != nil {
		t.Error(err)
	}
	return b.Bytes()
}

// resource is what the server holds at path: its list, its objects, and
// the bookmark ending a WatchList's initial events.
func (s *apiServer) resource(path string) (list runtime.Object, items []runtime.Object, bookmark runtime.Object, gv schema.GroupVersion) {
	end := metav1.ObjectMeta{ResourceVersion: "10", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}
	switch path {
	case "/api/v1/services":
		l := &v1.ServiceList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
		for _, o := range s.services {
			l.Items, items = append(l.Items, *o), append(items, o)
		}
		return l, items, &v1.Service{ObjectMeta: end}, v1.SchemeGroupVersion
	case "/apis/discovery.k8s.io/v1/endpointslices":
		l := &discovery.EndpointSliceList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
		for _, o := range s.slices {
			l.Items, items = append(l.Items, *o), append(items, o)
		}
		return l, items, &discovery.EndpointSlice{ObjectMeta: end}, discovery.SchemeGroupVersion
	}
	return nil, nil, nil, schema.GroupVersion{}
}

func (s *apiServer) handler(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		s.mu.Lock()
		s.requests = append(s.requests, r.URL.Path+"?"+r.URL.RawQuery)
		jsonLists := s.jsonLists
		s.mu.Unlock()
		list, items, bookmark, gv := s.resource(r.URL.Path)
		if list == nil {
			http.NotFound(w, r)
			return
		}
		if q.Get("watch") != "true" {
			if s.pageSize > 0 && q.Get("limit") != "" {
				list = page(t, list, q.Get("continue"), s.pageSize)
			}
			if jsonLists {
				w.Header().Set("Content-Type", runtime.ContentTypeJSON)
				_ = scheme.Codecs.LegacyCodec(gv).Encode(list, w)
				return
			}
			w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
			_, _ = w.Write(encode(t, list, gv))
			return
		}
		initial := q.Get("sendInitialEvents") == "true"
		if initial && s.refuseWatchList {
			http.Error(w, "sendInitialEvents unsupported", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";stream=watch")
		frames := framer.NewLengthDelimitedFrameWriter(w)
		send := func(typ watch.EventType, obj runtime.Object) {
			event := metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: encode(t, obj, gv)}}
			b, err := event.Marshal()
			if err != nil {
				t.Error(err)
			}
			_, _ = frames.Write(b)
		}
		if initial {
			for _, o := range items {
				send(watch.Added, o)
			}
			send(watch.Bookmark, bookmark)
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
}

// page is the page of list starting at the item the continue token
// names (its index), of at most n items, with a token for the next page
// when any remain.
func page(t *testing.T, list runtime.Object, token string, n int) runtime.Object {
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	from := 0
	if token != "" {
		if from, err = strconv.Atoi(token); err != nil {
			t.Fatalf("continue token %q", token)
		}
	}
	to := min(from+n, len(items))
	out := list.DeepCopyObject()
	if err := meta.SetList(out, items[from:to]); err != nil {
		t.Fatal(err)
	}
	if to < len(items) {
		acc, _ := meta.ListAccessor(out)
		acc.SetContinue(strconv.Itoa(to))
	}
	return out
}

func testSlices() []*discovery.EndpointSlice {
	a := Slice("ns", "web-1", "web", discovery.AddressTypeIPv4, SlicePort("http", v1.ProtocolTCP, 8080),
		Endpoint("10.0.0.1", OnNode("node-1"), InZone("zone-a")),
		Endpoint("10.0.0.2", OnNode("node-2"), NotReady, ZoneHints("zone-a")))
	a.Annotations = map[string]string{object.AnnotationLastChangeTriggerTime: "2026-11-30T12:00:00Z"}
	b := Slice("ns", "dns-1", "dns", discovery.AddressTypeIPv6, SlicePort("dns", v1.ProtocolUDP, 53),
		Endpoint("fd00::5", OnNode("node-1")))
	return []*discovery.EndpointSlice{a, b}
}

func testServices() []*v1.Service {
	web := Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", v1.ProtocolTCP, 80, 30080))
	web.Spec.Type = v1.ServiceTypeLoadBalancer
	web.Spec.SessionAffinity = v1.ServiceAffinityClientIP
	web.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}}
	web.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "203.0.113.1"}}
	web.Annotations = map[string]string{"keep": "me"}
	dns := Service("ns", "dns", ClusterIPs("fd00::10"), Port("dns", v1.ProtocolUDP, 53, 0))
	return []*v1.Service{web, dns}
}

// watchCopies reads n events from w, each a copy of type T.
func watchCopies[T any](t *testing.T, w watch.Interface, n int) []*T {
	t.Helper()
	var got []*T
	for len(got) < n {
		ev, ok := <-w.ResultChan()
		if !ok {
			t.Fatalf("watch closed after %d events", len(got))
		}
		c, isCopy := any(ev.Object).(*T)
		if !isCopy {
			t.Fatalf("event %s: %T, want %T", ev.Type, ev.Object, c)
		}
		got = append(got, c)
	}
	return got
}

// The slim clients' watches hand out the core's copies, equal to what the
// converter makes of the API objects, one event after another (each
// event's object is read from the frame it came in), and the
// end-of-initial-events bookmarks keep their annotation.
func TestWatchThroughTheSlimCodec(t *testing.T) {
	srv := &apiServer{services: testServices(), slices: testSlices()}
	ts := httptest.NewServer(srv.handler(t))
	defer ts.Close()
	core, disc, err := slimClients(protobufConfig(ts.URL), new(object.Converter))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := metav1.ListOptions{Watch: true, SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
	sw, err := disc.EndpointSlices("").Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sw.Stop()
	slices := watchCopies[object.EndpointSlice](t, sw, 3)
	var wantSlices []*object.EndpointSlice
	for _, s := range testSlices() {
		wantSlices = append(wantSlices, new(object.Converter).EndpointSlice(s))
	}
	if diff := cmp.Diff(wantSlices, slices[:2]); diff != "" {
		t.Errorf("watched slices (-converted +watched):\n%s", diff)
	}
	if a := slices[2].GetAnnotations(); a[metav1.InitialEventsAnnotationKey] != "true" || slices[2].ResourceVersion != "10" {
		t.Errorf("slices' bookmark: annotations %v, resource version %q", a, slices[2].ResourceVersion)
	}
	vw, err := core.Services("").Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer vw.Stop()
	services := watchCopies[object.Service](t, vw, 3)
	var wantServices []*object.Service
	for _, s := range testServices() {
		wantServices = append(wantServices, object.ServiceOf(s))
	}
	if diff := cmp.Diff(wantServices, services[:2]); diff != "" {
		t.Errorf("watched Services (-converted +watched):\n%s", diff)
	}
	if a := services[2].GetAnnotations(); a[metav1.InitialEventsAnnotationKey] != "true" || services[2].ResourceVersion != "10" {
		t.Errorf("Services' bookmark: annotations %v, resource version %q", a, services[2].ResourceVersion)
	}
}

// A list through the slim clients is an object.List of copies, equal to
// what the converter makes of the API objects, with the page's metadata;
// a list in JSON is the API's.
func TestListThroughTheSlimCodec(t *testing.T) {
	srv := &apiServer{services: testServices(), slices: testSlices(), pageSize: 1}
	ts := httptest.NewServer(srv.handler(t))
	defer ts.Close()
	conv := new(object.Converter)
	core, disc, err := slimClients(protobufConfig(ts.URL), conv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var slices, services []runtime.Object
	for _, s := range testSlices() {
		slices = append(slices, conv.EndpointSlice(s))
	}
	jsonServices := &v1.ServiceList{TypeMeta: metav1.TypeMeta{Kind: "ServiceList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
	for _, s := range testServices() {
		services = append(services, conv.Service(s))
		jsonServices.Items = append(jsonServices.Items, *s)
	}
	for _, c := range []struct {
		list func(context.Context, metav1.ListOptions) (runtime.Object, error)
		opts metav1.ListOptions
		json bool
		want runtime.Object
	}{
		{listCopies(core.RESTClient(), conv, "services"), metav1.ListOptions{}, false, &object.List{ResourceVersion: "10", Items: services}},
		{listCopies(disc.RESTClient(), conv, "endpointslices"), metav1.ListOptions{}, false, &object.List{ResourceVersion: "10", Items: slices}},
		{listCopies(disc.RESTClient(), conv, "endpointslices"), metav1.ListOptions{Limit: 1, Continue: "1"}, false,
			&object.List{ResourceVersion: "10", Items: slices[1:]}},
		{listCopies(core.RESTClient(), conv, "services"), metav1.ListOptions{Limit: 1}, false,
			&object.List{ResourceVersion: "10", Continue: "1", Items: services[:1]}},
		{listCopies(core.RESTClient(), conv, "services"), metav1.ListOptions{}, true, jsonServices},
	} {
		srv.mu.Lock()
		srv.jsonLists = c.json
		srv.mu.Unlock()
		got, err := c.list(ctx, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("list %+v, JSON %v (-converted +listed):\n%s", c.opts, c.json, diff)
		}
	}
	ts.Config.Handler = http.NotFoundHandler()
	if _, err := listCopies(core.RESTClient(), conv, "services")(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("an answer of 404: error %v, want the API's not-found", err)
	}
}

// The source over the slim clients, with the API server streaming its
// initial events (WatchList) and with one that refuses it (lists of
// copies, whole or in pages): the same graph as the source over
// client-go's own decoding.
func TestSourceThroughTheSlimCodec(t *testing.T) {
	node := Node("node-1", "zone-a", "10.1.0.1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	all := []runtime.Object{node}
	for _, s := range testSlices() {
		all = append(all, s)
	}
	for _, s := range testServices() {
		all = append(all, s)
	}
	plain := tracker.New(tracker.Options{NodeName: "node-1"})
	if err := (&Source{Client: fake.NewClientset(all...), NodeName: "node-1"}).Start(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if g, _ := json.Marshal(plain.Snapshot()); !bytes.Contains(g, []byte("10.0.0.1")) || !bytes.Contains(g, []byte("fd00::5")) ||
		!bytes.Contains(g, []byte("203.0.113.1")) {
		t.Fatalf("the graph compared against lacks the Services' or the slices' addresses: %s", g)
	}
	for _, c := range []struct {
		refuse   bool
		pageSize int
	}{{false, 0}, {true, 0}, {true, 1}} {
		srv := &apiServer{services: testServices(), slices: testSlices(), refuseWatchList: c.refuse, pageSize: c.pageSize}
		ts := httptest.NewServer(srv.handler(t))
		slim := tracker.New(tracker.Options{NodeName: "node-1"})
		src := &Source{Client: fake.NewClientset(node), NodeName: "node-1", SyncTimeout: 10 * time.Second,
			Config: protobufConfig(ts.URL)}
		if err := src.Start(ctx, slim); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		want, _ := json.MarshalIndent(plain.Snapshot(), "", " ")
		got, _ := json.MarshalIndent(slim.Snapshot(), "", " ")
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%+v: graph (-client-go's decoding +slim):\n%s", c, diff)
		}
		srv.mu.Lock()
		t.Logf("%+v: requests %v", c, srv.requests)
		if paged := strings.Contains(strings.Join(srv.requests, " "), "continue="); paged != (c.pageSize > 0) {
			t.Errorf("%+v: a page was asked for with a continue token: %v", c, paged)
		}
		srv.mu.Unlock()
		ts.CloseClientConnections()
		ts.Close()
	}
}

// protobufConfig asks ts for protobuf, as the command does (restConfig).
func protobufConfig(host string) *rest.Config {
	return &rest.Config{Host: host, ContentConfig: rest.ContentConfig{
		AcceptContentTypes: runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON, ContentType: runtime.ContentTypeProtobuf}}
}
