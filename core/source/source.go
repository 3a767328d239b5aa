// Package source defines how object sources (the kube informers, the YAML
// file) hand Services, EndpointSlices and Nodes to the core. Both sources
// write into the same Sink, so they produce the same graph.
package source

import (
	"context"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/object"
	v1 "k8s.io/api/core/v1"
)

// Sink receives object changes: Services and EndpointSlices as the core's
// own copies (package object; sources convert with an object.Converter),
// Nodes trimmed by object.Node. Objects passed in are read-only: the sink
// keeps the pointer and never modifies it. Implementations are safe for
// concurrent use.
type Sink interface {
	UpsertService(*object.Service)
	DeleteService(namespace, name string)
	UpsertEndpointSlice(*object.EndpointSlice)
	DeleteEndpointSlice(namespace, name string)
	UpsertNode(*v1.Node)
	DeleteNode(name string)
}

// Source feeds a Sink until its context ends.
type Source interface {
	// Start begins delivering objects to the sink and returns once the
	// first complete view (informer caches synced, file read) is in it.
	Start(ctx context.Context, sink Sink) error
}

// Observer hears about refused input. The core's own code never logs or
// counts; the command wires an Observer that does both.
type Observer interface {
	Rejected(build.Rejection)
}

// NopObserver ignores everything.
type NopObserver struct{}

// Rejected implements Observer.
func (NopObserver) Rejected(build.Rejection) {}
