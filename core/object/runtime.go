package object

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// *Service and *EndpointSlice are runtime.Objects, so a watch can hand
// copies made straight from the wire (DecodeService, DecodeEndpointSlice)
// to an informer whose example object is one. Copies carry no kind.
var (
	_ runtime.Object = (*Service)(nil)
	_ runtime.Object = (*EndpointSlice)(nil)
)

// GetObjectKind is empty: a copy does not keep its kind.
func (s *Service) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies s and everything it points to.
func (s *Service) DeepCopyObject() runtime.Object {
	out := *s
	out.Annotations = maps.Clone(s.Annotations)
	out.ClusterIPs = slices.Clone(s.ClusterIPs)
	out.ExternalIPs = slices.Clone(s.ExternalIPs)
	out.LoadBalancerSourceRanges = slices.Clone(s.LoadBalancerSourceRanges)
	out.AffinityTimeout = clonePtr(s.AffinityTimeout)
	out.Ports = slices.Clone(s.Ports)
	out.Ingress = slices.Clone(s.Ingress)
	return &out
}

// GetObjectKind is empty: a copy does not keep its kind.
func (s *EndpointSlice) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies s and everything it points to, except the Where
// and Hints' strings it shares with other copies (neither is written
// after a copy is made).
func (s *EndpointSlice) DeepCopyObject() runtime.Object {
	out := *s
	out.Ports = slices.Clone(s.Ports)
	for i, p := range out.Ports {
		out.Ports[i] = EndpointPort{Name: clonePtr(p.Name), Protocol: clonePtr(p.Protocol), Port: clonePtr(p.Port)}
	}
	out.Endpoints = slices.Clone(s.Endpoints)
	for i := range out.Endpoints {
		e := &out.Endpoints[i]
		if e.Hints != nil {
			e.Hints = &Hints{ForZones: slices.Clone(e.Hints.ForZones), ForNodes: slices.Clone(e.Hints.ForNodes)}
		}
	}
	return &out
}

// GetAnnotations reports the one annotation an EndpointSlice's copy
// keeps as such: the end of a WatchList's initial events (client-go's
// reflector reads it on bookmarks).
func (s *EndpointSlice) GetAnnotations() map[string]string {
	if !s.InitialEventsEnd {
		return nil
	}
	return maps.Clone(initialEventsEnd)
}

var initialEventsEnd = map[string]string{metav1.InitialEventsAnnotationKey: "true"}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
