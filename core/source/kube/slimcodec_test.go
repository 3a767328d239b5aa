package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/framer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// sliceServer answers EndpointSlice lists and watches in protobuf, as
// kube-apiserver does: a watch is length-delimited WatchEvent frames
// whose objects are runtime.Unknown envelopes.
type sliceServer struct {
	slices []*discovery.EndpointSlice
	// refuseWatchList answers a WatchList request with an error, as an
	// API server without WatchList does, so the client lists instead.
	refuseWatchList bool
	mu              sync.Mutex
	requests        []string
}

func (s *sliceServer) encode(t *testing.T, obj runtime.Object) []byte {
	enc := scheme.Codecs.EncoderForVersion(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), discovery.SchemeGroupVersion)
	var b bytes.Buffer
	if err := enc.Encode(obj, &b); err != nil {
		t.Error(err)
	}
	return b.Bytes()
}

func (s *sliceServer) handler(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		s.mu.Lock()
		s.requests = append(s.requests, r.URL.Path+"?"+r.URL.RawQuery)
		s.mu.Unlock()
		if q.Get("watch") != "true" {
			list := &discovery.EndpointSliceList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
			for _, sl := range s.slices {
				list.Items = append(list.Items, *sl)
			}
			w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
			_, _ = w.Write(s.encode(t, list))
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
			event := metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: s.encode(t, obj)}}
			b, err := event.Marshal()
			if err != nil {
				t.Error(err)
			}
			_, _ = frames.Write(b)
		}
		if initial {
			for _, sl := range s.slices {
				send(watch.Added, sl)
			}
			send(watch.Bookmark, &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "10",
				Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
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

// The slim client's watch hands out the core's copies, equal to what the
// converter makes of the API objects, one event after another (each event's
// object is read from the frame it came in), and the end-of-initial-events
// bookmark keeps its annotation.
func TestWatchThroughTheSlimCodec(t *testing.T) {
	srv := &sliceServer{slices: testSlices()}
	ts := httptest.NewServer(srv.handler(t))
	defer ts.Close()
	var conv object.Converter
	client, err := slimSliceClient(protobufConfig(ts.URL), &conv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := client.EndpointSlices("").Watch(ctx, metav1.ListOptions{Watch: true, SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []*object.EndpointSlice
	for len(got) < 3 {
		ev, ok := <-w.ResultChan()
		if !ok {
			t.Fatalf("watch closed after %d events", len(got))
		}
		s, isCopy := ev.Object.(*object.EndpointSlice)
		if !isCopy {
			t.Fatalf("event %s: %T, want *object.EndpointSlice", ev.Type, ev.Object)
		}
		got = append(got, s)
	}
	var want []*object.EndpointSlice
	for _, s := range testSlices() {
		want = append(want, new(object.Converter).EndpointSlice(s))
	}
	if diff := cmp.Diff(want, got[:2]); diff != "" {
		t.Errorf("watched copies (-converted +watched):\n%s", diff)
	}
	if a := got[2].GetAnnotations(); a[metav1.InitialEventsAnnotationKey] != "true" || got[2].ResourceVersion != "10" {
		t.Errorf("bookmark: annotations %v, resource version %q", a, got[2].ResourceVersion)
	}
}

// The source over the slim client, with the API server streaming its
// initial events (WatchList) and with one that refuses it (a list, whose
// API objects the informer's transform converts): the same graph as the
// source over client-go's own decoding.
func TestSourceThroughTheSlimCodec(t *testing.T) {
	node := Node("node-1", "zone-a", "10.1.0.1")
	svcs := []runtime.Object{
		Service("ns", "web", ClusterIPs("10.96.0.10"), Port("http", v1.ProtocolTCP, 80, 0)),
		Service("ns", "dns", ClusterIPs("fd00::10"), Port("dns", v1.ProtocolUDP, 53, 0)),
		node,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var all []runtime.Object
	for _, s := range testSlices() {
		all = append(all, s)
	}
	plain := tracker.New(tracker.Options{NodeName: "node-1"})
	if err := (&Source{Client: fake.NewClientset(append(all, svcs...)...), NodeName: "node-1"}).Start(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if g, _ := json.Marshal(plain.Snapshot()); !bytes.Contains(g, []byte("10.0.0.1")) || !bytes.Contains(g, []byte("fd00::5")) {
		t.Fatalf("the graph compared against lacks the slices' endpoints: %s", g)
	}
	for _, refuse := range []bool{false, true} {
		srv := &sliceServer{slices: testSlices(), refuseWatchList: refuse}
		ts := httptest.NewServer(srv.handler(t))
		slim := tracker.New(tracker.Options{NodeName: "node-1"})
		src := &Source{Client: fake.NewClientset(svcs...), NodeName: "node-1", SyncTimeout: 10 * time.Second,
			Config: protobufConfig(ts.URL)}
		if err := src.Start(ctx, slim); err != nil {
			t.Fatalf("refuse WatchList %v: %v", refuse, err)
		}
		want, _ := json.MarshalIndent(plain.Snapshot(), "", " ")
		got, _ := json.MarshalIndent(slim.Snapshot(), "", " ")
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("refuse WatchList %v: graph (-client-go's decoding +slim):\n%s", refuse, diff)
		}
		srv.mu.Lock()
		t.Logf("refuse WatchList %v: requests %v", refuse, srv.requests)
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
