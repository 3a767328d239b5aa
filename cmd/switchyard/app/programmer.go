package app

import (
	"context"
	"errors"
	"runtime/trace"
	"sync/atomic"

	"github.com/switchyard-proxy/switchyard/cmd/switchyard/app/health"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/runner"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// programmer is what the runner drives: the driver, plus the gap reporter
// and the health-check node ports that follow what was programmed.
type programmer struct {
	driver dataplanes.Driver
	gaps   *gapReporter
	hc     *health.Services
	mem    *memoryPolicy
	// held is what the driver held back at its last successful call.
	held atomic.Pointer[[]dataplanes.DegradedPart]
}

// A driver's error that is a runner.Partial (dataplanes.Degraded) is a
// success for everything it does not hold back: the health-check servers
// follow the graph, and the error goes on to the runner.

func (p *programmer) Sync(ctx context.Context, s graph.Snapshot) error {
	defer trace.StartRegion(ctx, "full sync").End() // in an execution trace (--trace-slow-changes)
	p.gaps.sync(s)
	err := p.driver.Sync(ctx, s)
	p.noteHeld(err)
	if failed(err) {
		return err
	}
	p.hc.Sync(s)
	// The first full sync leaves the start's garbage (the initial lists
	// or the file, decoded); the memory policy hands it back and then
	// keeps RSS near the live heap (memory.go).
	p.mem.firstSynced()
	return err
}

// auditingProgrammer is the programmer of a dataplanes.Auditor: the
// runner's periodic full syncs are its Resyncs (runner.Resyncer), which
// take what changed, as Apply does; no snapshot is built.
type auditingProgrammer struct {
	*programmer
	auditor dataplanes.Auditor
}

func (p auditingProgrammer) Resync(ctx context.Context, d graph.Delta) error {
	defer trace.StartRegion(ctx, "resync").End()
	return p.apply(d, func() error { return p.auditor.Resync(ctx, d) })
}

func (p *programmer) Apply(ctx context.Context, d graph.Delta) error {
	defer trace.StartRegion(ctx, "apply").End()
	return p.apply(d, func() error { return p.driver.Apply(ctx, d) })
}

// apply is a change by call (the driver's Apply or Resync).
func (p *programmer) apply(d graph.Delta, call func() error) error {
	p.gaps.apply(d)
	err := call()
	p.noteHeld(err)
	if failed(err) {
		return err
	}
	p.hc.Apply(d)
	return err
}

// failed reports whether a driver's error is a failure of the whole call
// (not a runner.Partial).
func failed(err error) bool {
	var partial runner.Partial
	return err != nil && !errors.As(err, &partial)
}
