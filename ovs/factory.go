package ovs

import (
	"context"
	"io"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

func init() {
	dataplanes.Register("ovs", &Factory{})
}

// Factory registers the OVS driver as dataplane "ovs".
type Factory struct {
	Options Options
}

// Description implements dataplanes.Factory.
func (f *Factory) Description() string {
	return "Open vSwitch: an OpenFlow 1.5 service pipeline (select groups, conntrack NAT, learned affinity) via ofnet and OVSDB"
}

// Capabilities implements dataplanes.Factory.
func (f *Factory) Capabilities() dataplanes.Capabilities {
	return dataplanes.Capabilities{Supported: dataplanes.All}
}

// AddFlags implements dataplanes.Factory.
func (f *Factory) AddFlags(fs *pflag.FlagSet) { f.Options.AddFlags(fs) }

// New implements dataplanes.Factory.
func (f *Factory) New(ctx context.Context, env dataplanes.Env) (dataplanes.Driver, error) {
	d, err := newDriver(ctx, f.Options)
	if err != nil {
		return nil, err
	}
	d.env = env
	return d, nil
}

// Render implements dataplanes.Factory: the groups and flows for the
// snapshot (pods on the bridge are not known offline, so per-pod flows
// are absent), as ovs-ofctl add-groups / add-flows text.
func (f *Factory) Render(w io.Writer, _ dataplanes.Env, s graph.Snapshot) error {
	cfg, err := f.Options.pipelineConfig()
	if err != nil {
		return err
	}
	m := newModel(cfg)
	if f.Options.UplinkPort != "" {
		m.setUplink(1) // the uplink's port number is known only on the bridge
	}
	m.sync(s)
	return m.render(w)
}
