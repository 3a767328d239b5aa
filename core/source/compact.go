package source

import (
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Compactor shrinks objects before a source keeps them: the sources hold
// every Service, EndpointSlice and Node for as long as the process runs,
// and at 10k Services with 100k endpoints the decoded objects were the
// largest part of the heap. It keeps what core/build and core/tracker
// read: names, labels, annotations (the trigger time, the ones a graph
// copies), the UID and resource version, and the spec and status fields
// the builder uses. It drops managed fields, kubectl's last-applied
// annotation (often the largest parts of an object), owner references,
// finalizers, a Service's selector (its EndpointSlices carry the result)
// and conditions, each endpoint's target reference, hostname and
// deprecated topology, and a Node's taints and its status but its
// addresses. What is left is shared where it repeats: one copy of each
// node name and zone and of true and false for all endpoints, and no
// spare capacity in the endpoint list.
//
// Objects are changed in place (sources hand it objects they own and
// never change them afterwards); it is safe for concurrent use.
type Compactor struct {
	mu      sync.Mutex
	strings map[string]*string
}

var (
	sharedTrue  = true
	sharedFalse = false
)

// Compact compacts obj (a Service, EndpointSlice or Node; anything else
// only loses its managed fields and the like) and returns it.
func (c *Compactor) Compact(obj any) any {
	switch o := obj.(type) {
	case *v1.Service:
		o.Spec.Selector = nil
		o.Status.Conditions = nil
	case *discovery.EndpointSlice:
		c.endpoints(o)
	case *v1.Node:
		o.Status = v1.NodeStatus{Addresses: o.Status.Addresses}
		o.Spec.Taints, o.Spec.ConfigSource = nil, nil
	}
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
		m.SetOwnerReferences(nil)
		m.SetFinalizers(nil)
		m.SetGenerateName("")
		m.SetCreationTimestamp(metav1.Time{})
		if a := m.GetAnnotations(); a != nil {
			delete(a, v1.LastAppliedConfigAnnotation)
		}
	}
	return obj
}

func (c *Compactor) endpoints(s *discovery.EndpointSlice) {
	if cap(s.Endpoints) > len(s.Endpoints) {
		s.Endpoints = slices.Clone(s.Endpoints)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range s.Endpoints {
		e := &s.Endpoints[i]
		e.TargetRef, e.Hostname, e.DeprecatedTopology = nil, nil, nil
		e.NodeName, e.Zone = c.intern(e.NodeName), c.intern(e.Zone)
		e.Conditions.Ready = shareBool(e.Conditions.Ready)
		e.Conditions.Serving = shareBool(e.Conditions.Serving)
		e.Conditions.Terminating = shareBool(e.Conditions.Terminating)
	}
}

// intern returns the shared pointer to *p's value (c.mu held).
func (c *Compactor) intern(p *string) *string {
	if p == nil {
		return nil
	}
	if c.strings == nil {
		c.strings = map[string]*string{}
	}
	if q, ok := c.strings[*p]; ok {
		return q
	}
	c.strings[*p] = p
	return p
}

func shareBool(p *bool) *bool {
	switch {
	case p == nil:
		return nil
	case *p:
		return &sharedTrue
	}
	return &sharedFalse
}
