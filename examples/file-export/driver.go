package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// Factory makes file-export drivers. The driver keeps the node's graph in
// a JSON file (the shape of `switchyard graph -o json`, docs/graph-json.md)
// for an agent that programs a dataplane switchyard does not know: a
// hardware load balancer, a BPF loader, a config generator. The file is
// replaced atomically (write, fsync, rename), so a reader never sees half
// of it.
type Factory struct {
	path string
	mode uint32
}

// Description implements dataplanes.Factory.
func (f *Factory) Description() string {
	return "writes the node's service graph as JSON to a file for an external agent"
}

// Capabilities implements dataplanes.Factory: the file carries the whole
// graph, so nothing is lost on the way; what the agent does with it is the
// agent's business.
func (f *Factory) Capabilities() dataplanes.Capabilities {
	return dataplanes.Capabilities{Supported: dataplanes.All, Gaps: map[dataplanes.Capability]string{
		dataplanes.PodNetwork:      "the graph (peers included) goes to a file; the agent reading it builds the pod network, not this driver",
		dataplanes.UpstreamSources: "what is masqueraded is the agent's choice"}}
}

// ReadsPeers implements dataplanes.PeerReader: the file carries the other
// nodes too, for an agent that builds the pod network between them.
func (f *Factory) ReadsPeers() bool { return true }

// AddFlags implements dataplanes.Factory.
func (f *Factory) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.path, "file-export-path", "/var/run/switchyard/graph.json", "file-export: where to write the graph")
	fs.Uint32Var(&f.mode, "file-export-mode", 0o644, "file-export: permission bits of the file")
}

// New implements dataplanes.Factory.
func (f *Factory) New(_ context.Context, _ dataplanes.Env) (dataplanes.Driver, error) {
	if f.path == "" {
		return nil, errors.New("--file-export-path is empty")
	}
	if fi, err := os.Stat(filepath.Dir(f.path)); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("--file-export-path %s: directory does not exist", f.path)
	}
	return &Driver{Path: f.path, Mode: os.FileMode(f.mode)}, nil
}

// Render implements dataplanes.Factory: it prints what the file would hold.
func (f *Factory) Render(w io.Writer, _ dataplanes.Env, s graph.Snapshot) error {
	b, err := encode(s)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Driver keeps the graph it was given and rewrites the file after each
// change; an unchanged graph is not rewritten.
type Driver struct {
	Path string
	Mode os.FileMode

	node    graph.Node
	peers   graph.Peers
	ports   graph.Index
	written []byte
}

// Sync implements dataplanes.Driver.
func (d *Driver) Sync(_ context.Context, s graph.Snapshot) error {
	d.node, d.peers, d.ports = s.Node, graph.PeersOf(s.Peers), graph.IndexOf(s.ServicePorts)
	return d.write()
}

// Apply implements dataplanes.Driver. Applying a delta is idempotent, so a
// batch retried after a failed write lands the same.
func (d *Driver) Apply(_ context.Context, delta graph.Delta) error {
	if d.ports == nil {
		d.ports, d.peers = graph.Index{}, graph.Peers{}
	}
	if delta.Node != nil {
		d.node = *delta.Node
	}
	d.peers.Apply(delta)
	d.ports.Apply(delta)
	return d.write()
}

// Cleanup implements dataplanes.Driver: it removes the file.
func (d *Driver) Cleanup(context.Context) error {
	if err := os.Remove(d.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	d.written = nil
	return nil
}

// Close implements dataplanes.Driver.
func (d *Driver) Close() error { return nil }

func (d *Driver) write() error {
	b, err := encode(graph.Snapshot{Node: d.node, Peers: d.peers.Sorted(), ServicePorts: d.ports.Sorted()})
	if err != nil {
		return err
	}
	if bytes.Equal(b, d.written) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(d.Path), "."+filepath.Base(d.Path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(d.Mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), d.Path); err != nil {
		return err
	}
	d.written = b
	return nil
}

func encode(s graph.Snapshot) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
