package dataplanes

import (
	"context"
	"io"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"k8s.io/component-base/metrics"
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

// Auditor is a Driver whose periodic full syncs need no snapshot: it
// keeps the graph from the calls it took, and checks what its dataplane
// holds against that with an audit of its own, off the change path.
// Resync applies delta (what changed since the last call; maybe empty) as
// Apply does and starts the audit; what the audit finds changed behind
// the driver's back is repaired by a later round it asks for
// (Env.RequestRound). The command calls it for the full syncs after the
// first (--sync-period); Sync stays the first, and the one after a
// failure.
type Auditor interface {
	Resync(ctx context.Context, delta graph.Delta) error
}

// Env is what the command gives a driver besides its flags. The node it
// programs is the graph's (graph.Snapshot.Node), not part of Env.
type Env struct {
	// Problems hears what the driver cannot program as asked, per
	// service port (nil: nobody listens; Report handles that).
	Problems ProblemSink
	// RequestRound asks the command's runner for a round soon: Apply is
	// called, with an empty delta when nothing changed, after the
	// min-sync period and any backoff, and again after a failure. A
	// driver calls it for what it hears from its dataplane (a pod's
	// port, a reconnection) and commits only in Sync and Apply, so every
	// commit has one path, one backoff and one set of metrics. It never
	// blocks. nil: no runner (render, install, cleanup): nothing asked.
	RequestRound func()
	// Metrics is the command's registry (served on /metrics), where a
	// driver registers metrics of its own, named switchyard_<driver>_...;
	// nil: nowhere.
	Metrics metrics.KubeRegistry
}

// Request calls RequestRound, when there is one.
func (e Env) Request() {
	if e.RequestRound != nil {
		e.RequestRound()
	}
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

// PeerReader is implemented by a Factory whose driver also builds the pod
// network between nodes (routes or tunnels to the other nodes' pod CIDRs):
// the core then watches every Node, not just its own, and hands the others
// out as the graph's peers (graph.Snapshot.Peers, graph.Delta.Peers).
type PeerReader interface {
	ReadsPeers() bool
}

// ReadsPeers reports whether a factory's driver wants the graph's peers.
func ReadsPeers(f Factory) bool {
	p, ok := f.(PeerReader)
	return ok && p.ReadsPeers()
}

// Installer is implemented by a Factory whose dataplane needs files on the
// node before it runs (ovs: switchyard-cni and its network configuration).
// `switchyard install --dataplane NAME` calls it; the chart runs that in
// an init container.
type Installer interface {
	Install(ctx context.Context, env Env) error
}

// Cleaner is implemented by a Factory that can remove what its driver left
// without starting one (starting may create state: the OVS driver makes
// its bridge). `switchyard cleanup` prefers it to New and Cleanup.
type Cleaner interface {
	Cleanup(ctx context.Context, env Env) error
}
