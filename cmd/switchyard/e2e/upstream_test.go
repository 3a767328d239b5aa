//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// allowedSkips are the reasons a selected spec may skip for, each matched
// against the skip's message, with why (docs/upstream-conformance.md
// lists them). Any other skip fails the test, as a failure does.
var allowedSkips = []struct {
	message *regexp.Regexp
	why     string
}{
	{regexp.MustCompile(`Only supported for providers`), "needs a cloud provider (its load balancers or API)"},
}

// upstreamNodes is the cluster's size unless SWITCHYARD_E2E_NODES says
// otherwise: three, as kind clusters in Cilium's and ovn-kubernetes' CI.
const upstreamNodes = 3

// TestUpstreamConformance is `make e2e-upstream`: upstream's own e2e.test
// (sig-network's [Conformance] specs, and its Services and Networking
// specs but the Slow, Serial, Disruptive, Flaky and feature-gated ones)
// against a cluster of real nodes (cluster.go) with the chart installed
// (dataplane=ovs, encap SWITCHYARD_E2E_ENCAP: none, routed, by default)
// and CoreDNS as the cluster's kube-dns, no kube-proxy anywhere. Every
// selected spec must pass or skip for a reason in allowedSkips.
func TestUpstreamConformance(t *testing.T) {
	ovstest.Require(t)
	// go test's -timeout ends the process without the test's cleanups: a
	// cluster of kubelets, containerd, etcd and OVS daemons would be left
	// running. The run's own backstop (runUpstream) must come first.
	if dl, ok := t.Deadline(); ok && time.Until(dl) < upstreamTimeout+10*time.Minute {
		t.Fatalf("go test -timeout %v is too short: the run takes up to %v, and a timeout would leave its cluster behind (make e2e-upstream uses 60m)",
			time.Until(dl).Round(time.Minute), upstreamTimeout+5*time.Minute)
	}
	bins := cached(t, "SWITCHYARD_E2E_DIR", "hack/ensure-e2e.sh")
	encap := os.Getenv("SWITCHYARD_E2E_ENCAP")
	if encap == "" {
		encap = "none"
	}
	nodes := upstreamNodes
	if v := os.Getenv("SWITCHYARD_E2E_NODES"); v != "" {
		var err error
		if nodes, err = strconv.Atoi(v); err != nil || nodes < 1 {
			t.Fatalf("SWITCHYARD_E2E_NODES=%q: want a number of nodes", v)
		}
	}
	c := newRealCluster(t, buildNodeImages(t, bins), nodes, encap != "none")
	c.installChart(t, encap)
	n := c.Nodes[0]
	deployClusterDNS(t, n)

	reportDir := os.Getenv("SWITCHYARD_E2E_UPSTREAM_DIR")
	if reportDir == "" {
		reportDir = t.TempDir()
	}
	reportDir = filepath.Join(reportDir, "encap-"+encap)
	if err := os.MkdirAll(reportDir, 0o755); err != nil {
		t.Fatal(err)
	}
	c.explainDNS(t, reportDir)
	specs := runUpstream(t, n, nodes, bins, reportDir)
	table := upstreamTable(specs)
	if err := os.WriteFile(filepath.Join(reportDir, "table.md"), []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("upstream e2e, encap %s:\n%s", encap, table)
	for _, s := range specs {
		switch s.State {
		case "passed":
		case "skipped":
			if !skipAllowed(s.Message) {
				t.Errorf("skipped for a reason not in allowedSkips: %s: %s", s.Name, firstLine(s.Message))
			}
		default:
			t.Errorf("%s: %s: %s", s.State, s.Name, firstLine(s.Message))
		}
	}
}

func skipAllowed(message string) bool {
	for _, a := range allowedSkips {
		if a.message.MatchString(message) {
			return true
		}
	}
	return false
}
