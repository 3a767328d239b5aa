package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("min-sync-period: 3s\nsync-period: 40s\nnode-name: from-file\nports: [1, 2]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(t *testing.T, min, sync time.Duration, node, dp string, ports []string)
	}{
		{"file fills unset flags", nil, nil, func(t *testing.T, min, sync time.Duration, node, dp string, ports []string) {
			if min != 3*time.Second || sync != 40*time.Second || node != "from-file" || strings.Join(ports, ",") != "1,2" {
				t.Errorf("min=%s sync=%s node=%s ports=%v", min, sync, node, ports)
			}
		}},
		{"environment beats file", nil, map[string]string{"SWITCHYARD_MIN_SYNC_PERIOD": "5s", "SWITCHYARD_DATAPLANE": "ovs"},
			func(t *testing.T, min, sync time.Duration, node, dp string, _ []string) {
				if min != 5*time.Second || sync != 40*time.Second || dp != "ovs" {
					t.Errorf("min=%s sync=%s dataplane=%s", min, sync, dp)
				}
			}},
		{"flag beats environment and file", []string{"--min-sync-period=7s", "--node-name=from-flag"},
			map[string]string{"SWITCHYARD_MIN_SYNC_PERIOD": "5s", "SWITCHYARD_NODE_NAME": "from-env"},
			func(t *testing.T, min, sync time.Duration, node, dp string, _ []string) {
				if min != 7*time.Second || node != "from-flag" {
					t.Errorf("min=%s node=%s", min, node)
				}
			}},
		{"default when nothing sets it", nil, nil, func(t *testing.T, _, _ time.Duration, _, dp string, _ []string) {
			if dp != "none" {
				t.Errorf("dataplane=%q, want the default", dp)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			min := fs.Duration("min-sync-period", time.Second, "")
			sync := fs.Duration("sync-period", 30*time.Second, "")
			node := fs.String("node-name", "", "")
			dp := fs.String("dataplane", "none", "")
			ports := fs.StringSlice("ports", nil, "")
			fs.String("config", "", "")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := applyConfig(fs, cfg); err != nil {
				t.Fatal(err)
			}
			tc.check(t, *min, *sync, *node, *dp, *ports)
		})
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, file, want string
		env              map[string]string
	}{
		{"unknown key", write("a.yaml", "min-sync-perod: 1s\n"), `unknown setting "min-sync-perod"`, nil},
		{"bad value in file", write("b.yaml", "min-sync-period: soon\n"), "--min-sync-period", nil},
		{"bad value in environment", "", "SWITCHYARD_MIN_SYNC_PERIOD", map[string]string{"SWITCHYARD_MIN_SYNC_PERIOD": "later"}},
		{"missing file", filepath.Join(dir, "none.yaml"), "none.yaml", nil},
		{"not YAML", write("c.yaml", "{{{"), "c.yaml", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			fs.Duration("min-sync-period", time.Second, "")
			err := applyConfig(fs, tc.file)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
