package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	"github.com/switchyard-proxy/switchyard/core/source/file"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

const clusterFile = "../../../examples/cluster.yaml"

func TestKubeAndFileSourcesGiveIdenticalGraphs(t *testing.T) {
	data, err := os.ReadFile(clusterFile)
	if err != nil {
		t.Fatal(err)
	}
	l := file.Parse(clusterFile, data)
	if len(l.Errors) != 0 {
		t.Fatalf("example file has errors: %v", l.Errors)
	}
	var objs []runtime.Object
	for _, o := range l.Services {
		objs = append(objs, o.DeepCopy())
	}
	for _, o := range l.Slices {
		objs = append(objs, o.DeepCopy())
	}
	for _, o := range l.Nodes {
		objs = append(objs, o.DeepCopy())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	fromKube := tracker.New(tracker.Options{NodeName: "node-1"})
	if err := (&Source{Client: fake.NewClientset(objs...), NodeName: "node-1"}).Start(ctx, fromKube); err != nil {
		t.Fatal(err)
	}
	fromFile := tracker.New(tracker.Options{NodeName: "node-1"})
	if err := (&file.Source{Path: clusterFile}).Start(ctx, fromFile); err != nil {
		t.Fatal(err)
	}
	k, f := fromKube.Snapshot(), fromFile.Snapshot()
	kj, _ := json.MarshalIndent(k, "", " ")
	fj, _ := json.MarshalIndent(f, "", " ")
	if string(kj) != string(fj) {
		t.Fatalf("graphs differ:\nkube:\n%s\nfile:\n%s", kj, fj)
	}
	// The comparison means something only if the graph is not trivial.
	if len(k.ServicePorts) != 10 || k.Node.Zone != "zone-a" || len(k.Node.IPs) != 2 {
		t.Fatalf("graph has %d service ports, node %+v; want 10 ports on node-1 in zone-a", len(k.ServicePorts), k.Node)
	}
}

// waitFor polls the tracker's snapshot until cond holds.
func waitFor(t *testing.T, tr *tracker.Tracker, what string, cond func(graph.Snapshot) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if cond(tr.Snapshot()) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestKubeSourceFollowsChanges(t *testing.T) {
	client := fake.NewClientset()
	tr := tracker.New(tracker.Options{NodeName: "node-1"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := (&Source{Client: client, NodeName: "node-1"}).Start(ctx, tr); err != nil {
		t.Fatal(err)
	}
	svc := Service("ns", "web", ClusterIPs("10.96.0.1"), Port("http", v1.ProtocolTCP, 80, 0))
	if _, err := client.CoreV1().Services("ns").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tr, "service", func(s graph.Snapshot) bool { return len(s.ServicePorts) == 1 })

	sl := Slice("ns", "web-1", "web", discovery.AddressTypeIPv4, SlicePort("http", v1.ProtocolTCP, 8080), Endpoint("10.244.0.5"))
	if _, err := client.DiscoveryV1().EndpointSlices("ns").Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tr, "endpoint", func(s graph.Snapshot) bool {
		return len(s.ServicePorts) == 1 && s.ServicePorts[0].InternalEndpoints.Len() == 1
	})

	node := Node("node-1", "zone-q", "192.0.2.1")
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tr, "node zone", func(s graph.Snapshot) bool { return s.Node.Zone == "zone-q" })

	if err := client.CoreV1().Services("ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tr, "service deletion", func(s graph.Snapshot) bool { return len(s.ServicePorts) == 0 })
}

func TestUnreachableAPIServerTimesOut(t *testing.T) {
	client, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	src := &Source{Client: client, NodeName: "node-1", SyncTimeout: 300 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = src.Start(ctx, tracker.New(tracker.Options{NodeName: "node-1"}))
	if err == nil || !strings.Contains(err.Error(), "did not sync") {
		t.Fatalf("err = %v", err)
	}
}

func TestSelector(t *testing.T) {
	cases := map[string]string{
		"":           "!service.kubernetes.io/headless,!service.kubernetes.io/service-proxy-name",
		"switchyard": "!service.kubernetes.io/headless",
	}
	for proxy, want := range cases {
		sel, err := Selector(proxy)
		if err != nil || sel.String() != want {
			t.Errorf("Selector(%q) = %v, %v; want %s", proxy, sel, err, want)
		}
	}
}

// slowSink counts what reaches it, taking its time over each Service as a
// sink busy with a large initial list does.
type slowSink struct {
	mu       sync.Mutex
	services int
}

func (s *slowSink) UpsertService(*object.Service) {
	time.Sleep(time.Millisecond)
	s.mu.Lock()
	s.services++
	s.mu.Unlock()
}
func (s *slowSink) DeleteService(string, string)              {}
func (s *slowSink) UpsertEndpointSlice(*object.EndpointSlice) {}
func (s *slowSink) DeleteEndpointSlice(string, string)        {}
func (s *slowSink) UpsertNode(*v1.Node)                       {}
func (s *slowSink) DeleteNode(string)                         {}

// Start returns only once the handlers have seen the whole initial list:
// a first full sync taken from a partial view would remove from the
// dataplane every Service not yet delivered (what a restart at 10k
// Services did while Start waited on the informers' stores alone).
func TestStartReturnsAfterTheHandlersSawTheInitialList(t *testing.T) {
	const n = 400
	var objs []runtime.Object
	for i := range n {
		objs = append(objs, Service("ns", fmt.Sprintf("svc-%d", i), ClusterIPs(fmt.Sprintf("10.96.%d.%d", i/250, i%250+1)), Port("http", v1.ProtocolTCP, 80, 0)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &slowSink{}
	if err := (&Source{Client: fake.NewClientset(objs...), NodeName: "node-1"}).Start(ctx, sink); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	got := sink.services
	sink.mu.Unlock()
	if got != n {
		t.Fatalf("Start returned with %d of %d Services delivered to the sink", got, n)
	}
}

// namesSink records the Services and EndpointSlices it is handed.
type namesSink struct {
	mu    sync.Mutex
	names []string
}

func (s *namesSink) add(n string) { s.mu.Lock(); s.names = append(s.names, n); s.mu.Unlock() }
func (s *namesSink) UpsertService(o *object.Service) {
	s.add("svc " + o.Name)
}
func (s *namesSink) UpsertEndpointSlice(o *object.EndpointSlice) {
	s.add("slice " + o.Name)
}
func (s *namesSink) DeleteService(string, string)       {}
func (s *namesSink) DeleteEndpointSlice(string, string) {}
func (s *namesSink) UpsertNode(*v1.Node)                {}
func (s *namesSink) DeleteNode(string)                  {}

// TestInformersSelectAsKubeProxy: objects labelled for another proxy or
// headless never reach the sink (the informers list with the selector).
func TestInformersSelectAsKubeProxy(t *testing.T) {
	web := Service("ns", "web", ClusterIPs("10.96.0.1"))
	other := Service("ns", "other", ClusterIPs("10.96.0.2"), Label(object.LabelServiceProxyName, "another"))
	headless := Slice("ns", "web-h", "web", discovery.AddressTypeIPv4, SliceLabel(object.LabelHeadless, ""))
	slice := Slice("ns", "web-1", "web", discovery.AddressTypeIPv4)
	sink := &namesSink{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := (&Source{Client: fake.NewClientset(web, other, headless, slice), NodeName: "node-1"}).Start(ctx, sink); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if got := strings.Join(sink.names, ","); got != "svc web,slice web-1" && got != "slice web-1,svc web" {
		t.Errorf("the sink got %q; want only the Service web and the slice web-1", got)
	}
}
