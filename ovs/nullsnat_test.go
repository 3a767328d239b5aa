package ovs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn/ofconntest"
)

func TestNullSNATDecision(t *testing.T) {
	for _, c := range []struct {
		mode, datapath, version string
		want                    bool
	}{
		{NullSNATAuto, "system", "3.1.0", true},
		{NullSNATAuto, "system", "", true},
		{NullSNATAuto, "netdev", "3.1.0", false},
		{NullSNATAuto, "netdev", "3.2.9", false},
		{NullSNATAuto, "netdev", "3.3.0", true},
		{NullSNATAuto, "netdev", "3.10.1", true},
		{NullSNATAuto, "netdev", "4.0", true},
		{NullSNATAuto, "netdev", "2.17.9", false},
		{NullSNATAuto, "netdev", "3.5.0-1+b1", true},
		{NullSNATAuto, "netdev", "", false},
		{NullSNATAuto, "netdev", "Open vSwitch", false},
		{NullSNATOn, "netdev", "3.1.0", true},
		{NullSNATOff, "system", "3.5.0", false},
	} {
		got, why := nullSNATDecision(c.mode, c.datapath, c.version)
		if got != c.want || why == "" {
			t.Errorf("nullSNATDecision(%q, %q, %q) = %v, %q; want %v with a reason", c.mode, c.datapath, c.version, got, why, c.want)
		}
	}
}

// The driver commits connections that are no Service's with nat(src)
// where the bridge's datapath resolves a clash with it: it asks OVS its
// version (the in-memory bridge answers as the release it is told).
func TestDriverCommitsWithNullSNATWhereTheDatapathResolvesClashes(t *testing.T) {
	for _, c := range []struct {
		name, mode, datapath, version string
		want                          int // commits with nat(src)
	}{
		{"kernel", NullSNATAuto, "system", ofconntest.ModelledVersion, 4},
		{"userspace 3.1", NullSNATAuto, "netdev", ofconntest.ModelledVersion, 0},
		{"userspace 3.3", NullSNATAuto, "netdev", "3.3.0", 4},
		{"forced on", NullSNATOn, "netdev", ofconntest.ModelledVersion, 4},
		{"forced off", NullSNATOff, "system", "3.3.0", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			br := ofconntest.NewBridge()
			br.SetVersion(c.version)
			md := newMemDriver(t, br, memCluster(), func(o *Options) { o.NullSNAT, o.DatapathType = c.mode, c.datapath })
			if err := md.sync(); err != nil {
				t.Fatal(err)
			}
			var commits []string
			for _, l := range strings.Split(br.Dump(), "\n") {
				if strings.Contains(l, "table=10,") && strings.Contains(l, "ct(commit") {
					commits = append(commits, l)
				}
			}
			if len(commits) != 4 {
				t.Fatalf("%d commits in table 10, want 4:\n%s", len(commits), strings.Join(commits, "\n"))
			}
			got := strings.Count(strings.Join(commits, "\n"), ",nat(src)")
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("commits with nat(src) (-want +got):\n%s\n%s", diff, strings.Join(commits, "\n"))
			}
		})
	}
}
