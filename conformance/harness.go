package conformance

import (
	"context"
	"net/netip"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/source/file"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// Harness is one driver's dataplane with the test world built around it.
// A harness makes its driver with its Factory's New (flags set as a user
// would set them), so the driver under test is the one `switchyard run`
// would use.
type Harness interface {
	// Name is the column the harness gets in the matrix: the driver's
	// registered name, with a variant when one driver runs in several
	// settings ("hns-overlay").
	Name() string
	// Factory is the driver's factory: its capabilities decide which steps
	// of a case are judged (with what each step needs, read from the
	// case), its annotation keys reach the graph.
	Factory() dataplanes.Factory
	// Driver is the driver under test, already connected.
	Driver() dataplanes.Driver
	// CanProbe says why the harness cannot send a probe ("" if it can):
	// a limit of the harness, not of the driver.
	CanProbe(p Probe) string
	// Probe makes one connection (or sends one datagram) and says what
	// happened.
	Probe(ctx context.Context, p Probe) Answer
}

// ObjectHarness is a harness whose driver runs in switchyard processes of
// their own, fed Kubernetes objects (a file, an API server) as a user runs
// it, instead of graphs handed to a Driver in the test: Check gives it the
// cluster's whole state after each step and probes once it returns.
type ObjectHarness interface {
	Harness
	// Program makes the processes hold these Services and EndpointSlices
	// (with the world's Nodes) and returns once they have programmed them.
	Program(ctx context.Context, objs file.Objects) error
}

// Diagnoser is a harness that can say, right after a connection went
// unanswered where a case expected an answer, what its dataplane showed
// then (drop counters, cached datapath flows, whether a new connection
// is answered). Check adds it to the connection's detail; it never
// changes the verdict.
type Diagnoser interface {
	Diagnose(p Probe) string
}

// NodeSource is the kind of the "node" probe source: the node itself
// (host network).
const NodeSource MemberKind = "node"

// Probe is one connection a harness makes.
type Probe struct {
	From     string     // a member's name, or "node"
	FromKind MemberKind // the member's kind, or NodeSource
	Src      netip.Addr // the source address (same family as Dst)
	Dst      netip.AddrPort
	Protocol graph.Protocol
	Conn     int           // 0-based number of this connection within its probe
	Interval time.Duration // pause before each connection after the first
	// NeedsSource: the case checks the source address the backend saw, so
	// the answer must carry it.
	NeedsSource bool
}

// Outcome is what became of one connection.
type Outcome string

// The outcomes a harness reports, in the words a case expects them
// (ExpectRejected, ExpectDropped). Rejected, Dropped and Unreachable are
// the network's non-answers; Failed is the harness's own failure (no such
// pod, no probe for the protocol, an error it cannot classify, a graph it
// could not read) and satisfies no expectation.
const (
	Answered    Outcome = "answered"    // a backend answered; Answer.Identity says which
	Rejected    Outcome = "rejected"    // TCP reset or ICMP port unreachable
	Dropped     Outcome = "dropped"     // no answer at all within the probe's timeout
	Unreachable Outcome = "unreachable" // ICMP host or network unreachable, or no route
	Failed      Outcome = "failed"      // anything else (Answer.Detail says what)
)

// Answer is what a harness saw of one connection.
type Answer struct {
	Outcome  Outcome
	Identity string     // "p1:8080" when Answered
	Source   netip.Addr // the source the backend saw, when the harness knows it
	// NodeSource is the address "node" names as a source for this
	// connection, when the harness's node SNATs to another address than
	// its own IP (HNS: the load balancer's SourceVIP upstream would use);
	// unset, "node" is the node's IP.
	NodeSource netip.Addr
	Detail     string
}
