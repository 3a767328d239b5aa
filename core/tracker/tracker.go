package tracker

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	"github.com/switchyard-proxy/switchyard/core/source"
)

// Observer hears about changes and refused input (for logs and metrics).
type Observer interface {
	source.Observer
	// ObjectChanged is called once per Service, EndpointSlice or Node event.
	ObjectChanged(kind string)
}

type nopObserver struct{ source.NopObserver }

func (nopObserver) ObjectChanged(string) {}

// Options configure a Tracker.
type Options struct {
	NodeName string
	Build    build.Options
	Observer Observer         // nil: ignore
	Now      func() time.Time // nil: time.Now
	// Peers keeps the other Nodes too and hands them out as the graph's
	// peers (for drivers that build the pod network between nodes);
	// otherwise only NodeName's Node is read.
	Peers bool
}

type svcKey struct{ namespace, name string }
type sliceKey struct{ namespace, name string }

// serviceState is everything the tracker keeps per Service key.
type serviceState struct {
	svc        *object.Service
	slices     []*build.PreparedSlice // any order, one per name (most Services have one or two: a slice, not a map each)
	merged     build.Merged           // what its last build merged from its slices (for the next)
	applied    []*graph.ServicePort   // as last committed, sorted
	rejections []build.Rejection      // from the last build
	skipped    string                 // why the last build left the whole Service out ("" if it did not)
	dirty      uint64                 // generation of the newest change; 0 = clean
	changedAt  time.Time              // earliest change not yet committed
}

// Tracker implements source.Sink and produces Batches. It is safe for
// concurrent use; at most one Batch may be outstanding at a time.
type Tracker struct {
	opts Options
	// onChange is called, without the lock held, whenever a change makes
	// a batch worth taking (the sync runner's trigger: see OnChange).
	onChange atomic.Pointer[func()]

	mu          sync.Mutex
	builder     *build.Builder // its working space is reused from one Service's build to the next
	gen         uint64
	services    map[svcKey]*serviceState
	sliceOwner  map[sliceKey]string // the Service (of the slice's namespace) a slice was filed under
	orphanRejs  map[sliceKey]build.Rejection
	node        graph.Node
	appliedNode graph.Node
	nodeDirty   uint64
	dirty       map[svcKey]struct{} // services with dirty != 0
	// initialSynced: a full batch was committed (see markDirty).
	initialSynced bool
	peers         peerState
	nodeRejs      map[string][]build.Rejection // by Node name, as last reported
}

var _ source.Sink = (*Tracker)(nil)

// New returns an empty Tracker for one node.
func New(opts Options) *Tracker {
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Tracker{
		opts:        opts,
		builder:     build.NewBuilder(opts.Build),
		services:    map[svcKey]*serviceState{},
		sliceOwner:  map[sliceKey]string{},
		orphanRejs:  map[sliceKey]build.Rejection{},
		dirty:       map[svcKey]struct{}{},
		node:        graph.Node{Name: opts.NodeName},
		appliedNode: graph.Node{Name: opts.NodeName},
		peers:       newPeerState(),
		nodeRejs:    map[string][]build.Rejection{},
	}
}

// state returns the service's state, creating it.
func (t *Tracker) state(k svcKey) *serviceState {
	st := t.services[k]
	if st == nil {
		st = &serviceState{}
		t.services[k] = st
	}
	return st
}

// markDirty records a change to a service at time at.
//
// Changes the tracker hears before its first full batch is committed (the
// initial lists, whatever their trigger times) are not measured for network
// programming latency: they are the state at start, not changes, and a
// restart of a large cluster reported thousands of old trigger times
// (upstream too measures only trigger times after its tracker started).
func (t *Tracker) markDirty(k svcKey, at time.Time) {
	st := t.state(k)
	t.gen++
	if !t.initialSynced {
		at = time.Time{}
	}
	switch {
	case st.dirty == 0:
		t.dirty[k] = struct{}{}
		st.changedAt = at
	case !at.IsZero() && (st.changedAt.IsZero() || at.Before(st.changedAt)):
		st.changedAt = at
	}
	st.dirty = t.gen
}

// forget drops a service's state once nothing refers to it any more.
func (t *Tracker) forget(k svcKey) {
	st := t.services[k]
	if st != nil && st.svc == nil && len(st.slices) == 0 && len(st.applied) == 0 && st.dirty == 0 {
		delete(t.services, k)
	}
}

// UpsertService implements source.Sink.
func (t *Tracker) UpsertService(svc *object.Service) {
	t.opts.Observer.ObjectChanged("Service")
	t.mu.Lock()
	k := svcKey{svc.Namespace, svc.Name}
	t.state(k).svc = svc
	t.markDirty(k, t.opts.Now())
	t.mu.Unlock()
	t.changed()
}

// DeleteService implements source.Sink.
func (t *Tracker) DeleteService(namespace, name string) {
	t.opts.Observer.ObjectChanged("Service")
	t.mu.Lock()
	k := svcKey{namespace, name}
	if st := t.services[k]; st != nil {
		st.svc = nil
		t.markDirty(k, t.opts.Now())
	}
	t.mu.Unlock()
	t.changed()
}

// UpsertEndpointSlice implements source.Sink.
func (t *Tracker) UpsertEndpointSlice(s *object.EndpointSlice) {
	t.opts.Observer.ObjectChanged("EndpointSlice")
	sk := sliceKey{s.Namespace, s.Name}
	svcName := s.ServiceName
	prepared := build.PrepareSlice(s, t.opts.Build) // validated once, here, outside the lock
	t.mu.Lock()
	now := t.changeTime(s)
	if old, ok := t.sliceOwner[sk]; ok && old != svcName {
		t.removeSlice(sk, svcKey{s.Namespace, old}, now)
	}
	var rej *build.Rejection
	if svcName == "" || s.Name == "" {
		r := build.Rejection{
			Object: build.ObjectRef{Kind: "EndpointSlice", Namespace: s.Namespace, Name: s.Name},
			Field:  "metadata.labels", Reason: build.ReasonMissingServiceName,
			Message: "slice has no " + object.LabelServiceName + " label (or no name): ignored",
		}
		if _, seen := t.orphanRejs[sk]; !seen {
			rej = &r
		}
		t.orphanRejs[sk] = r
	} else {
		delete(t.orphanRejs, sk)
		k := svcKey{s.Namespace, svcName}
		st := t.state(k)
		st.setSlice(prepared)
		t.sliceOwner[sk] = svcName
		t.markDirty(k, now)
	}
	t.mu.Unlock()
	if rej != nil {
		t.opts.Observer.Rejected(*rej)
	}
	t.changed()
}

// DeleteEndpointSlice implements source.Sink.
func (t *Tracker) DeleteEndpointSlice(namespace, name string) {
	t.opts.Observer.ObjectChanged("EndpointSlice")
	sk := sliceKey{namespace, name}
	t.mu.Lock()
	delete(t.orphanRejs, sk)
	if name, ok := t.sliceOwner[sk]; ok {
		t.removeSlice(sk, svcKey{namespace, name}, t.opts.Now())
	}
	t.mu.Unlock()
	t.changed()
}

func (t *Tracker) removeSlice(sk sliceKey, k svcKey, now time.Time) {
	delete(t.sliceOwner, sk)
	if st := t.services[k]; st != nil {
		st.removeSlice(sk.name)
		t.markDirty(k, now)
	}
}

// setSlice adds s, or replaces the slice of its name.
func (st *serviceState) setSlice(s *build.PreparedSlice) {
	for i, old := range st.slices {
		if old.Name == s.Name {
			st.slices[i] = s
			return
		}
	}
	st.slices = append(st.slices, s)
}

// removeSlice drops the slice named name, if there is one.
func (st *serviceState) removeSlice(name string) {
	st.slices = slices.DeleteFunc(st.slices, func(s *build.PreparedSlice) bool { return s.Name == name })
	if len(st.slices) == 0 {
		st.slices = nil
	}
}

// changeTime is when the change behind a slice happened: the controller's
// trigger-time annotation when present and sane, else now.
func (t *Tracker) changeTime(s *object.EndpointSlice) time.Time {
	now := t.opts.Now()
	if at := s.TriggerTime; !at.IsZero() && !at.After(now) {
		return at
	}
	return now
}

// HasPending reports whether anything changed since the last commit.
func (t *Tracker) HasPending() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.dirty) > 0 || t.nodeDirty != 0 || len(t.peers.dirty) > 0
}

// OnChange sets what is called, without the lock held, whenever a change
// makes a batch worth taking: the sync runner subscribes when it is made
// (runner.New). A change before that waits in the tracker for the first
// batch.
func (t *Tracker) OnChange(f func()) { t.onChange.Store(&f) }

func (t *Tracker) changed() {
	if f := t.onChange.Load(); f != nil {
		(*f)()
	}
}

// Explain explains how the graph's entries of a Service come about on
// this node (build.Explain), from the objects the tracker holds; false
// when it holds no such Service.
func (t *Tracker) Explain(namespace, name string) (build.ServiceExplanation, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.services[svcKey{namespace, name}]
	if st == nil || st.svc == nil {
		return build.ServiceExplanation{}, false
	}
	return build.ExplainPrepared(st.svc, st.slices, t.node, t.opts.Build), true
}
