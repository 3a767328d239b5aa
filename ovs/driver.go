package ovs

import (
	"context"
	"errors"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// Driver programs one OVS bridge.
type Driver struct{}

func newDriver(ctx context.Context, o Options) (*Driver, error) {
	return nil, errors.New("not yet")
}

func (d *Driver) Sync(ctx context.Context, s graph.Snapshot) error { return nil }
func (d *Driver) Apply(ctx context.Context, s graph.Delta) error   { return nil }
func (d *Driver) Cleanup(ctx context.Context) error                { return nil }
func (d *Driver) Close() error                                     { return nil }
