package app

import (
	"context"
	"errors"
	"runtime/debug"
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
	// freeing: a collection that hands memory back is running.
	freeing atomic.Bool
	// held is what the driver held back at its last successful call.
	held atomic.Pointer[[]dataplanes.DegradedPart]
}

// A driver's error that is a runner.Partial (dataplanes.Degraded) is a
// success for everything it does not hold back: the health-check servers
// follow the graph, and the error goes on to the runner.

func (p *programmer) Sync(ctx context.Context, s graph.Snapshot) error {
	return p.sync(ctx, s, p.driver.Sync)
}

// Resync is a periodic full sync: the driver's Resync when it is a
// dataplanes.Auditor, else its Sync.
func (p *programmer) Resync(ctx context.Context, s graph.Snapshot) error {
	if a, ok := p.driver.(dataplanes.Auditor); ok {
		return p.sync(ctx, s, a.Resync)
	}
	return p.Sync(ctx, s)
}

// sync is a full sync by sync (the driver's Sync or Resync).
func (p *programmer) sync(ctx context.Context, s graph.Snapshot, sync func(context.Context, graph.Snapshot) error) error {
	p.gaps.sync(s)
	err := sync(ctx, s)
	p.noteHeld(err)
	if failed(err) {
		return err
	}
	p.hc.Sync(s)
	// A full sync leaves what it read back and compared as garbage (the
	// first one also the start's: the initial lists or the file,
	// decoded), a third of the live heap for a periodic one
	// (docs/scale.md, "RSS"). Collected and handed back to the OS now, in the
	// background (the sync is done), RSS stays near the live heap
	// instead of growing to twice it before the next collection; it
	// costs one collection per --sync-period. docs/scale.md has the
	// numbers.
	if p.freeing.CompareAndSwap(false, true) {
		go func() {
			defer p.freeing.Store(false)
			debug.FreeOSMemory()
		}()
	}
	return err
}

func (p *programmer) Apply(ctx context.Context, d graph.Delta) error {
	p.gaps.apply(d)
	err := p.driver.Apply(ctx, d)
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
