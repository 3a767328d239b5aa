package dataplanes

import (
	"context"
	"io"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/core/graph"
)

// Driver programs one dataplane. The runner calls Sync and Apply from one
// goroutine, one call at a time. An error leaves the batch pending: it is
// retried, merged with later changes, so a driver must keep what it already
// installed consistent with what it tells the core (the graph handed to a
// failed call is handed again).
type Driver interface {
	// Sync makes the dataplane hold exactly the snapshot: add what is
	// missing, fix what differs, remove what this driver owns and the
	// snapshot lacks.
	Sync(ctx context.Context, snapshot graph.Snapshot) error
	// Apply changes the dataplane by a delta.
	Apply(ctx context.Context, delta graph.Delta) error
	// Cleanup removes everything this driver owns, and nothing else.
	Cleanup(ctx context.Context) error
	// Close releases connections; the dataplane keeps its state.
	Close() error
}

// Env is what the command tells a driver about where it runs.
type Env struct {
	NodeName string
	// Problems hears what the driver cannot program as asked, per
	// service port (nil: nobody listens; Report handles that).
	Problems ProblemSink
}

// Factory is what a driver registers: its description, flags and
// capabilities, and how to make a Driver or render without one.
type Factory interface {
	// Description is one line for `switchyard drivers`.
	Description() string
	// Capabilities declares what the driver can program.
	Capabilities() Capabilities
	// AddFlags adds the driver's own flags, each prefixed with its name
	// ("--ovs-bridge"); the values are read when New or Render runs.
	AddFlags(fs *pflag.FlagSet)
	// New checks the flags and returns a driver connected to its dataplane.
	New(ctx context.Context, env Env) (Driver, error)
	// Render writes what the driver would program for the snapshot to w,
	// touching no dataplane.
	Render(w io.Writer, env Env, snapshot graph.Snapshot) error
}

// AnnotationReader is implemented by a Factory whose driver reads Service
// annotations; the core then carries those keys into the graph.
type AnnotationReader interface {
	Annotations() []string
}

// AnnotationsOf returns the annotation keys a factory's driver reads.
func AnnotationsOf(f Factory) []string {
	if a, ok := f.(AnnotationReader); ok {
		return a.Annotations()
	}
	return nil
}
