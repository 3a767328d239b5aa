package ovs

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/engine"
	"github.com/switchyard-proxy/switchyard/ovs/hostnet"
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
	return dataplanes.Capabilities{Supported: append(append([]dataplanes.Capability{}, dataplanes.All...), dataplanes.NodeCapabilities...)}
}

// AddFlags implements dataplanes.Factory.
func (f *Factory) AddFlags(fs *pflag.FlagSet) { f.Options.AddFlags(fs) }

// ReadsPeers implements dataplanes.PeerReader: the driver routes or
// tunnels to the other nodes' pod CIDRs.
func (f *Factory) ReadsPeers() bool { return true }

// New implements dataplanes.Factory.
func (f *Factory) New(ctx context.Context, env dataplanes.Env) (dataplanes.Driver, error) {
	return newDriver(ctx, f.Options, env)
}

// Render implements dataplanes.Factory: the groups and flows for the
// snapshot (renderModel), as ovs-ofctl add-groups / add-flows text.
func (f *Factory) Render(w io.Writer, _ dataplanes.Env, s graph.Snapshot) error {
	m, err := f.renderModel(s)
	if err != nil {
		return err
	}
	return m.Render(w)
}

// renderModel is the model of the snapshot offline: pods on the bridge are
// not known, so per-pod flows are absent; the gateway is port 1 with the
// router's MAC, the tunnel port 2; the null SNAT is as the driver decides
// it without asking OVS its version (on for the kernel datapath).
func (f *Factory) renderModel(s graph.Snapshot) (*engine.Model, error) {
	cfg, err := f.Options.pipelineConfig()
	if err != nil {
		return nil, err
	}
	m := engine.NewModel(cfg, f.Options.Encap != EncapNone)
	nullSNAT, _ := nullSNATDecision(f.Options.NullSNAT, f.Options.DatapathType, "")
	m.SetCommitNullSNAT(nullSNAT)
	bp := engine.Ports{GatewayPort: 1, GatewayMAC: cfg.RouterMAC}
	if f.Options.Encap != EncapNone {
		bp.TunnelPort = 2
	}
	m.SetPorts(bp)
	m.Sync(s)
	return m, nil
}

// Install implements dataplanes.Installer: switchyard-cni and its network
// configuration go into the CNI directories.
func (f *Factory) Install(_ context.Context, _ dataplanes.Env) error {
	if _, err := f.Options.pipelineConfig(); err != nil {
		return err
	}
	return installCNI(f.Options)
}

// Cleanup implements dataplanes.Cleaner: it removes what a driver and
// switchyard-cni left on the node, creating nothing (no bridge, no ports)
// on the way. Without Open vSwitch, only the host's side and the files.
func (f *Factory) Cleanup(ctx context.Context, env dataplanes.Env) error {
	o := f.Options
	if _, err := o.pipelineConfig(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	if _, err := os.Stat(filepath.Join(o.RunDir, "db.sock")); err != nil {
		host, err := hostnet.Open(o.HostNetNS)
		if err != nil {
			return err
		}
		defer host.Close()
		return (&Driver{opts: o, host: host}).cleanupNode(ctx)
	}
	d, err := openDriver(ctx, o, env, openOVS)
	if err != nil {
		return err
	}
	defer d.Close()
	if ok, err := d.db.BridgeExists(ctx, o.Bridge); err != nil {
		return err
	} else if ok {
		if err := d.connect(ctx); err != nil {
			return err
		}
	}
	return d.Cleanup(ctx)
}
