package ovs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/ovs/podport"
)

// installCNI installs the portmap plugin found next to switchyard-cni and
// chains it for hostPorts, and without one installs switchyard-cni alone;
// uninstallCNI removes exactly what it installed.
func TestInstallCNIChainsPortmapWhenShipped(t *testing.T) {
	for _, tc := range []struct {
		name      string
		shipped   []string // next to switchyard-cni
		wantBins  []string
		wantTypes []string
	}{
		{"with portmap", []string{"switchyard-cni", PortmapType}, []string{podport.PluginType, PortmapType}, []string{podport.PluginType, PortmapType}},
		{"without portmap", []string{"switchyard-cni"}, []string{podport.PluginType}, []string{podport.PluginType}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ship, bin, conf := filepath.Join(dir, "image"), filepath.Join(dir, "bin"), filepath.Join(dir, "net.d")
			for _, d := range []string{ship, bin, conf} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tc.shipped {
				if err := os.WriteFile(filepath.Join(ship, f), []byte("#!/bin/true\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			// A portmap the node already has stays as it is.
			if err := os.WriteFile(filepath.Join(bin, "portmap"), []byte("the node's"), 0o755); err != nil {
				t.Fatal(err)
			}
			o := Options{CNIBinary: filepath.Join(ship, "switchyard-cni"), CNIBinDir: bin, CNIConfDir: conf, Bridge: "br-sy"}
			if err := installCNI(o); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(append([]string{"portmap"}, tc.wantBins...), dirNames(t, bin)); diff != "" {
				t.Errorf("CNI bin directory (-want +got):\n%s", diff)
			}
			b, err := os.ReadFile(filepath.Join(conf, ConfListName))
			if err != nil {
				t.Fatal(err)
			}
			var l struct {
				Plugins []struct {
					Type         string          `json:"type"`
					Capabilities map[string]bool `json:"capabilities"`
				} `json:"plugins"`
			}
			if err := json.Unmarshal(b, &l); err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, p := range l.Plugins {
				types = append(types, p.Type)
				if p.Type == PortmapType && !p.Capabilities["portMappings"] {
					t.Errorf("portmap is chained without the portMappings capability: %s", b)
				}
			}
			if diff := cmp.Diff(tc.wantTypes, types); diff != "" {
				t.Errorf("chained plugins (-want +got):\n%s", diff)
			}
			if err := uninstallCNI(o); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"portmap"}, dirNames(t, bin)); diff != "" {
				t.Errorf("CNI bin directory after uninstall (-want +got):\n%s", diff)
			}
		})
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
