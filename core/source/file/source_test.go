package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/object"
	v1 "k8s.io/api/core/v1"
)

// eventSink records what the source hands over, as short strings.
type eventSink struct {
	mu     sync.Mutex
	events []string
	rejs   []build.Rejection
}

func (s *eventSink) add(e string) { s.mu.Lock(); s.events = append(s.events, e); s.mu.Unlock() }
func (s *eventSink) UpsertService(x *object.Service) {
	s.add("+svc " + x.Namespace + "/" + x.Name)
}
func (s *eventSink) DeleteService(ns, n string) { s.add("-svc " + ns + "/" + n) }
func (s *eventSink) UpsertEndpointSlice(x *object.EndpointSlice) {
	s.add("+slice " + x.Namespace + "/" + x.Name)
}
func (s *eventSink) DeleteEndpointSlice(ns, n string) { s.add("-slice " + ns + "/" + n) }
func (s *eventSink) UpsertNode(x *v1.Node)            { s.add("+node " + x.Name) }
func (s *eventSink) DeleteNode(n string)              { s.add("-node " + n) }
func (s *eventSink) Rejected(r build.Rejection) {
	s.mu.Lock()
	s.rejs = append(s.rejs, r)
	s.mu.Unlock()
}

// take returns and clears the events seen so far, sorted.
func (s *eventSink) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.events
	s.events = nil
	slices.Sort(out)
	return out
}

func (s *eventSink) rejections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rejs)
}

func svcDoc(name, ip string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: %s, namespace: shop}\nspec:\n  clusterIP: %s\n  ports: [{name: http, port: 80}]\n", name, ip)
}

func sliceDoc(name, svc string, ips ...string) string {
	var eps []string
	for _, ip := range ips {
		eps = append(eps, "- addresses: ["+ip+"]")
	}
	return fmt.Sprintf("apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: %s\n  namespace: shop\n  labels: {kubernetes.io/service-name: %s}\naddressType: IPv4\nports: [{name: http, port: 8080}]\nendpoints:\n%s\n",
		name, svc, strings.Join(eps, "\n"))
}

func write(t *testing.T, path string, docs ...string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil { // atomic, as editors and ConfigMaps do
		t.Fatal(err)
	}
}

// await waits until the sink's events equal want.
func await(t *testing.T, s *eventSink, want ...string) {
	t.Helper()
	slices.Sort(want)
	var got []string
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		got = append(got, s.take()...)
		slices.Sort(got)
		if slices.Equal(got, want) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("events = %v, want %v", got, want)
}

// quiet asserts no event arrives for a few poll intervals.
func quiet(t *testing.T, s *eventSink) {
	t.Helper()
	time.Sleep(60 * time.Millisecond)
	if ev := s.take(); len(ev) != 0 {
		t.Fatalf("unexpected events %v", ev)
	}
}

func TestMissingFileIsAnError(t *testing.T) {
	src := &Source{Path: filepath.Join(t.TempDir(), "nope.yaml")}
	err := src.Start(context.Background(), &eventSink{})
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("err = %v", err)
	}
}

func TestWatchAppliesOnlyChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.yaml")
	write(t, path, svcDoc("a", "10.96.0.1"), svcDoc("b", "10.96.0.2"), sliceDoc("a-1", "a", "10.244.0.1"))
	sink := &eventSink{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &Source{Path: path, Interval: 10 * time.Millisecond, Observer: sink}
	if err := src.Start(ctx, sink); err != nil {
		t.Fatal(err)
	}
	await(t, sink, "+svc shop/a", "+svc shop/b", "+slice shop/a-1")

	// One endpoint added: only that slice is handed over again.
	write(t, path, svcDoc("a", "10.96.0.1"), svcDoc("b", "10.96.0.2"), sliceDoc("a-1", "a", "10.244.0.1", "10.244.0.2"))
	await(t, sink, "+slice shop/a-1")

	// Same content rewritten: nothing.
	write(t, path, svcDoc("a", "10.96.0.1"), svcDoc("b", "10.96.0.2"), sliceDoc("a-1", "a", "10.244.0.1", "10.244.0.2"))
	quiet(t, sink)

	// A Service removed from the file is deleted.
	write(t, path, svcDoc("a", "10.96.0.1"), sliceDoc("a-1", "a", "10.244.0.1", "10.244.0.2"))
	await(t, sink, "-svc shop/b")

	// A Service whose document breaks, but still names it, is kept.
	broken := strings.Replace(svcDoc("a", "10.96.0.1"), "port: 80", "port: eighty", 1)
	write(t, path, broken, sliceDoc("a-1", "a", "10.244.0.1", "10.244.0.2"))
	quiet(t, sink)
	if sink.rejections() != 1 {
		t.Fatalf("rejections = %d, want the broken document reported once", sink.rejections())
	}

	// A document too broken to name anything holds every deletion.
	write(t, path, svcDoc("a", "10.96.0.1"), "kind: [unclosed\n")
	quiet(t, sink)
	// Fixed: the slice that is really gone is now deleted.
	write(t, path, svcDoc("a", "10.96.0.1"))
	await(t, sink, "-slice shop/a-1")

	// The file vanishing keeps the state and is reported.
	before := sink.rejections()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	quiet(t, sink)
	if sink.rejections() != before+1 {
		t.Fatalf("rejections = %d, want one more for the missing file", sink.rejections())
	}
	write(t, path, svcDoc("a", "10.96.0.9"))
	await(t, sink, "+svc shop/a")
}
