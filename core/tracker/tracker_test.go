package tracker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	. "github.com/switchyard-proxy/switchyard/core/testobj"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

const ns = "ns"

var (
	tcp = v1.ProtocolTCP
	v4  = discovery.AddressTypeIPv4
)

type recorder struct {
	rejected []build.Rejection
	changes  map[string]int
}

func (r *recorder) Rejected(x build.Rejection) { r.rejected = append(r.rejected, x) }
func (r *recorder) ObjectChanged(kind string) {
	if r.changes == nil {
		r.changes = map[string]int{}
	}
	r.changes[kind]++
}

func newTracker(t *testing.T) (*Tracker, *recorder) {
	t.Helper()
	rec := &recorder{}
	return New(Options{NodeName: "node-1", Observer: rec}), rec
}

func web(name, ip string, opts ...ServiceOption) *v1.Service {
	return Service(ns, name, append([]ServiceOption{ClusterIPs(ip), Port("http", tcp, 80, 0)}, opts...)...)
}

func webSlice(svc, name string, ips ...string) *discovery.EndpointSlice {
	opts := []SliceOption{SlicePort("http", tcp, 8080)}
	for _, ip := range ips {
		opts = append(opts, Endpoint(ip, OnNode("node-2")))
	}
	return Slice(ns, name, svc, v4, opts...)
}

// describe renders a delta as "+name", "~name", "-name" sorted, and "node".
func describe(d graph.Delta) string {
	var s []string
	if d.Node != nil {
		s = append(s, "node")
	}
	for _, sp := range d.Added {
		s = append(s, "+"+sp.Name.String())
	}
	for _, u := range d.Updated {
		s = append(s, "~"+u.New.Name.String())
	}
	for _, sp := range d.Removed {
		s = append(s, "-"+sp.Name.String())
	}
	return strings.Join(s, " ")
}

func endpointsOf(sp *graph.ServicePort) string {
	var s []string
	for e := range sp.InternalEndpoints.All() {
		s = append(s, e.String())
	}
	return strings.Join(s, " ")
}

func TestDeltas(t *testing.T) {
	tr, _ := newTracker(t)
	tr.UpsertService(object.ServiceOf(web("a", "10.96.0.1")))
	tr.UpsertService(object.ServiceOf(web("b", "10.96.0.2")))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(webSlice("a", "a-1", "10.244.0.1")))
	b := tr.Next(false)
	if got := describe(b.Delta); got != "+ns/a:http/TCP +ns/b:http/TCP" {
		t.Fatalf("first delta = %q", got)
	}
	tr.Commit(b)
	if b := tr.Next(false); !b.Delta.Empty() {
		t.Fatalf("delta after commit = %q, want empty", describe(b.Delta))
	}

	// One endpoint change touches only its own service, old and new given.
	tr.UpsertEndpointSlice(object.EndpointSliceOf(webSlice("a", "a-1", "10.244.0.1", "10.244.0.2")))
	b = tr.Next(false)
	if got := describe(b.Delta); got != "~ns/a:http/TCP" {
		t.Fatalf("delta = %q", got)
	}
	u := b.Delta.Updated[0]
	if endpointsOf(u.Old) != "10.244.0.1:8080" || endpointsOf(u.New) != "10.244.0.1:8080 10.244.0.2:8080" {
		t.Fatalf("update old=%q new=%q", endpointsOf(u.Old), endpointsOf(u.New))
	}
	tr.Commit(b)

	// Re-sending an identical object changes nothing.
	tr.UpsertService(object.ServiceOf(web("b", "10.96.0.2")))
	b = tr.Next(false)
	if !b.Delta.Empty() {
		t.Fatalf("identical upsert gave %q", describe(b.Delta))
	}
	tr.Commit(b)
	if tr.HasPending() {
		t.Fatal("tracker still pending after committing an empty batch")
	}

	// Removing a port from the spec removes just that entry.
	tr.UpsertService(object.ServiceOf(web("a", "10.96.0.1", Port("metrics", tcp, 9090, 0))))
	b = tr.Next(false)
	if got := describe(b.Delta); got != "+ns/a:metrics/TCP" {
		t.Fatalf("delta = %q", got)
	}
	tr.Commit(b)
	tr.UpsertService(object.ServiceOf(web("a", "10.96.0.1")))
	b = tr.Next(false)
	if got := describe(b.Delta); got != "-ns/a:metrics/TCP" {
		t.Fatalf("delta = %q", got)
	}
	tr.Commit(b)

	// Deleting the Service removes its ports; its slices wait for it.
	tr.DeleteService(ns, "a")
	b = tr.Next(false)
	if got := describe(b.Delta); got != "-ns/a:http/TCP" {
		t.Fatalf("delete delta = %q", got)
	}
	tr.Commit(b)
	tr.UpsertService(object.ServiceOf(web("a", "10.96.0.1")))
	b = tr.Next(false)
	if got := describe(b.Delta); got != "+ns/a:http/TCP" || endpointsOf(b.Delta.Added[0]) != "10.244.0.1:8080 10.244.0.2:8080" {
		t.Fatalf("re-add delta = %q %v", describe(b.Delta), b.Delta.Added)
	}
}

func TestFailedApplyIsRetriedWithEverythingPending(t *testing.T) {
	tr, _ := newTracker(t)
	tr.UpsertService(object.ServiceOf(web("a", "10.96.0.1")))
	tr.UpsertService(object.ServiceOf(web("b", "10.96.0.2")))
	tr.Commit(tr.Next(false))

	tr.UpsertEndpointSlice(object.EndpointSliceOf(webSlice("a", "a-1", "10.244.0.1")))
	failed := tr.Next(false) // the driver fails: no Commit
	if describe(failed.Delta) != "~ns/a:http/TCP" {
		t.Fatalf("delta = %q", describe(failed.Delta))
	}
	tr.UpsertEndpointSlice(object.EndpointSliceOf(webSlice("b", "b-1", "10.244.0.9")))
	retry := tr.Next(false)
	if got := describe(retry.Delta); got != "~ns/a:http/TCP ~ns/b:http/TCP" {
		t.Fatalf("retry delta = %q, want both changes", got)
	}
	if endpointsOf(retry.Delta.Updated[0].Old) != "" {
		t.Fatal("retry must be relative to what was applied, not to the failed batch")
	}
	tr.Commit(retry)
	if tr.HasPending() {
		t.Fatal("still pending after the retry committed")
	}
}

func TestChangeDuringOutstandingBatchStaysPending(t *testing.T) {
	tr, _ := newTracker(t)
	tr.UpsertService(object.ServiceOf(web("a", "10.96.0.1")))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(webSlice("a", "a-1", "10.244.0.1")))
	b := tr.Next(false)
	tr.UpsertEndpointSlice(object.EndpointSliceOf(webSlice("a", "a-1", "10.244.0.7"))) // arrives while the driver works
	tr.Commit(b)
	if !tr.HasPending() {
		t.Fatal("the newer change was lost")
	}
	b2 := tr.Next(false)
	if len(b2.Delta.Updated) != 1 {
		t.Fatalf("delta = %q", describe(b2.Delta))
	}
	if o, n := endpointsOf(b2.Delta.Updated[0].Old), endpointsOf(b2.Delta.Updated[0].New); o != "10.244.0.1:8080" || n != "10.244.0.7:8080" {
		t.Fatalf("old=%q new=%q", o, n)
	}
}

func TestSliceMovesBetweenServices(t *testing.T) {
	tr, _ := newTracker(t)
	tr.UpsertService(object.ServiceOf(web("a", "10.96.0.1")))
	tr.UpsertService(object.ServiceOf(web("b", "10.96.0.2")))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(webSlice("a", "s", "10.244.0.1")))
	tr.Commit(tr.Next(false))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(webSlice("b", "s", "10.244.0.1")))
	b := tr.Next(false)
	if got := describe(b.Delta); got != "~ns/a:http/TCP ~ns/b:http/TCP" {
		t.Fatalf("delta = %q", got)
	}
	tr.Commit(b)
	tr.DeleteEndpointSlice(ns, "s")
	if got := describe(tr.Next(false).Delta); got != "~ns/b:http/TCP" {
		t.Fatalf("delete delta = %q", got)
	}
}

func TestNodeChanges(t *testing.T) {
	tr, _ := newTracker(t)
	tr.UpsertService(object.ServiceOf(web("a", "10.96.0.1")))
	tr.UpsertService(object.ServiceOf(web("b", "10.96.0.2")))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(Slice(ns, "a-1", "a", v4, SlicePort("http", tcp, 8080),
		Endpoint("10.244.0.1", ZoneHints("zone-a")), Endpoint("10.244.0.2", ZoneHints("zone-b")))))
	tr.Commit(tr.Next(false))

	tr.UpsertNode(Node("node-9", "zone-a", "192.0.2.9")) // not ours
	if tr.HasPending() {
		t.Fatal("another node's update made the tracker pending")
	}
	tr.UpsertNode(Node("node-1", "zone-a", "192.0.2.1", "2001:db8::1"))
	b := tr.Next(false)
	if got := describe(b.Delta); got != "node ~ns/a:http/TCP" {
		t.Fatalf("zone change delta = %q (only a's endpoints depend on the zone)", got)
	}
	if endpointsOf(b.Delta.Updated[0].New) != "10.244.0.1:8080" {
		t.Fatalf("endpoints = %q", endpointsOf(b.Delta.Updated[0].New))
	}
	if n := b.Delta.Node; n.Zone != "zone-a" || len(n.IPs) != 2 {
		t.Fatalf("node = %+v", *n)
	}
	tr.Commit(b)
	tr.UpsertNode(Node("node-1", "zone-a", "192.0.2.7"))
	b = tr.Next(false)
	if got := describe(b.Delta); got != "node" {
		t.Fatalf("IP change delta = %q", got)
	}
	tr.Commit(b)
	tr.DeleteNode("node-1")
	if got := describe(tr.Next(false).Delta); got != "node ~ns/a:http/TCP" {
		t.Fatalf("node delete delta = %q", got)
	}
}

func TestRejectionsReportedOncePerAppearance(t *testing.T) {
	tr, rec := newTracker(t)
	tr.UpsertService(object.ServiceOf(web("a", "10.96.0.1")))
	bad := webSlice("a", "a-1", "10.244.0.1", "10.244.0.999")
	tr.UpsertEndpointSlice(object.EndpointSliceOf(bad))
	tr.Commit(tr.Next(false))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(bad.DeepCopy()))
	tr.Commit(tr.Next(false))
	orphan := webSlice("a", "x", "10.244.0.3")
	delete(orphan.Labels, discovery.LabelServiceName)
	tr.UpsertEndpointSlice(object.EndpointSliceOf(orphan))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(orphan))

	var reasons []build.Reason
	for _, r := range rec.rejected {
		reasons = append(reasons, r.Reason)
	}
	want := []build.Reason{build.ReasonInvalidIP, build.ReasonMissingServiceName}
	slices.Sort(reasons)
	if !slices.Equal(reasons, want) {
		t.Fatalf("reported %v, want each once: %v", reasons, want)
	}
	if rec.changes["EndpointSlice"] != 4 || rec.changes["Service"] != 1 {
		t.Fatalf("change counts = %v", rec.changes)
	}
	// Fixed, then broken again: reported again.
	tr.UpsertEndpointSlice(object.EndpointSliceOf(webSlice("a", "a-1", "10.244.0.1")))
	tr.Commit(tr.Next(false))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(bad))
	tr.Commit(tr.Next(false))
	if n := len(rec.rejected); n != 3 {
		t.Fatalf("reported %d times in all, want 3", n)
	}
}

func TestChangedAtUsesTriggerTime(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tr := New(Options{NodeName: "node-1", Now: func() time.Time { return now }})
	tr.UpsertService(object.ServiceOf(web("a", "10.96.0.1")))
	tr.Commit(tr.Next(true))
	s := webSlice("a", "a-1", "10.244.0.1")
	trigger := now.Add(-3 * time.Second)
	s.Annotations = map[string]string{object.AnnotationLastChangeTriggerTime: trigger.Format(time.RFC3339Nano)}
	tr.UpsertEndpointSlice(object.EndpointSliceOf(s))
	b := tr.Next(false)
	if len(b.ChangedAt) != 1 || !b.ChangedAt[0].Equal(trigger) {
		t.Fatalf("ChangedAt = %v, want [%v]", b.ChangedAt, trigger)
	}
}

// The initial lists are the state at start, not changes: what arrives
// before the first full sync is committed is not measured, whatever its
// trigger time; a change after it is, even merged with an unmeasured one.
func TestChangesBeforeTheFirstFullSyncAreNotMeasured(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tr := New(Options{NodeName: "node-1", Now: func() time.Time { return now }})
	old := webSlice("a", "a-1", "10.244.0.1")
	old.Annotations = map[string]string{object.AnnotationLastChangeTriggerTime: now.Add(-time.Hour).Format(time.RFC3339Nano)}
	tr.UpsertService(object.ServiceOf(web("a", "10.96.0.1")))
	tr.UpsertEndpointSlice(object.EndpointSliceOf(old))
	tr.UpsertService(object.ServiceOf(web("b", "10.96.0.2")))
	first := tr.Next(true)
	for _, at := range first.ChangedAt {
		if !at.IsZero() {
			t.Fatalf("first full sync measured %v", first.ChangedAt)
		}
	}
	// b changes before the first sync is committed, and again after.
	tr.UpsertService(object.ServiceOf(web("b", "10.96.0.3")))
	tr.Commit(first)
	tr.UpsertService(object.ServiceOf(web("b", "10.96.0.4")))
	if b := tr.Next(false); len(b.ChangedAt) != 1 || !b.ChangedAt[0].Equal(now) {
		t.Fatalf("ChangedAt = %v, want [%v]", b.ChangedAt, now)
	}
}

func TestSnapshotHoldsCleanAndDirtyServices(t *testing.T) {
	tr, _ := newTracker(t)
	tr.UpsertService(object.ServiceOf(web("a", "10.96.0.1")))
	tr.Commit(tr.Next(false))
	tr.UpsertService(object.ServiceOf(web("b", "10.96.0.2")))
	snap := tr.Snapshot()
	var names []string
	for _, sp := range snap.ServicePorts {
		names = append(names, sp.Name.String())
	}
	if strings.Join(names, " ") != "ns/a:http/TCP ns/b:http/TCP" {
		t.Fatalf("snapshot = %v", names)
	}
	if !tr.HasPending() {
		t.Fatal("Snapshot must not commit")
	}
}
