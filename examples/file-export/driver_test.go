package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-proxy/switchyard/cmd/switchyard/app"
	"github.com/switchyard-proxy/switchyard/core/graph"
)

func port(name string, eps ...string) *graph.ServicePort {
	sp := &graph.ServicePort{
		Name:       graph.ServicePortName{Namespace: "ns", Name: name, Port: "http", Protocol: graph.TCP},
		ClusterIPs: []netip.Addr{netip.MustParseAddr("10.96.0.1")},
		Port:       80,
	}
	var list []graph.Endpoint
	for _, e := range eps {
		list = append(list, graph.Endpoint{IP: netip.MustParseAddr(e), Port: 8080, Ready: true, Serving: true})
	}
	graph.SortEndpoints(list)
	sp.InternalEndpoints = graph.EndpointListOf(list...)
	return sp
}

func readGraph(t *testing.T, path string) graph.Snapshot {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s graph.Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func stat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

func TestDriverWritesSyncsAndDeltas(t *testing.T) {
	dir := t.TempDir()
	d := &Driver{Path: filepath.Join(dir, "graph.json"), Mode: 0o640}
	ctx := context.Background()
	a, b := port("a", "10.244.0.1"), port("b")
	if err := d.Sync(ctx, graph.Snapshot{Node: graph.Node{Name: "n1"}, ServicePorts: []*graph.ServicePort{a, b}}); err != nil {
		t.Fatal(err)
	}
	if s := readGraph(t, d.Path); s.Node.Name != "n1" || len(s.ServicePorts) != 2 {
		t.Fatalf("after sync: %+v", s)
	}
	if fi, _ := os.Stat(d.Path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}

	a2 := port("a", "10.244.0.1", "10.244.0.2")
	if err := d.Apply(ctx, graph.Delta{Updated: []graph.Update{{Old: a, New: a2}}, Removed: []*graph.ServicePort{b}}); err != nil {
		t.Fatal(err)
	}
	s := readGraph(t, d.Path)
	if len(s.ServicePorts) != 1 || s.ServicePorts[0].InternalEndpoints.Len() != 2 {
		t.Fatalf("after delta: %+v", s.ServicePorts)
	}

	// A delta that changes nothing leaves the file alone.
	before := stat(t, d.Path)
	if err := d.Apply(ctx, graph.Delta{Updated: []graph.Update{{Old: a2, New: a2}}}); err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(stat(t, d.Path), before) {
		t.Error("an unchanged graph was rewritten")
	}

	// A failed write is an error; the retried batch lands the same.
	moved := dir + ".moved"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	c := port("c")
	if err := d.Apply(ctx, graph.Delta{Added: []*graph.ServicePort{c}}); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
	if err := os.Rename(moved, dir); err != nil {
		t.Fatal(err)
	}
	if err := d.Apply(ctx, graph.Delta{Added: []*graph.ServicePort{c}}); err != nil {
		t.Fatal(err)
	}
	if s := readGraph(t, d.Path); len(s.ServicePorts) != 2 {
		t.Fatalf("after retry: %d ports", len(s.ServicePorts))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}

	if err := d.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Path); !os.IsNotExist(err) {
		t.Fatalf("cleanup left the file: %v", err)
	}
}

// TestThroughTheCommand builds nothing: it runs switchyard's command in
// process with this module's driver registered, as the binary does.
func TestThroughTheCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "graph.json")
	var stdout, stderr bytes.Buffer
	code := app.Run(context.Background(), []string{"run", "--dataplane", "file-export", "--file", "../cluster.yaml",
		"--node-name", "node-1", "--once", "--file-export-path", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("run exited %d: %s", code, stderr.String())
	}
	var want bytes.Buffer
	if code := app.Run(context.Background(), []string{"graph", "--file", "../cluster.yaml", "--node-name", "node-1", "-o", "json"}, &want, &stderr); code != 0 {
		t.Fatalf("graph exited %d: %s", code, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("exported file differs from `switchyard graph -o json`:\n%s", got)
	}

	code = app.Run(context.Background(), []string{"run", "--dataplane", "file-export", "--file", "../cluster.yaml",
		"--once", "--file-export-path", "/nonexistent/dir/graph.json"}, &stdout, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "directory does not exist") {
		t.Fatalf("bad path: exit %d, stderr %q", code, stderr.String())
	}
}
