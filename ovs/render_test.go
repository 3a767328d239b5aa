//go:build linux

package ovs

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"antrea.io/ofnet/ofctrl"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/source/file"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/ofconn"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// exampleSnapshot is examples/cluster.yaml seen from node-1, plus an
// SCTP dual-stack service with affinity (the example has none).
func exampleSnapshot(t *testing.T) graph.Snapshot {
	t.Helper()
	tr := tracker.New(tracker.Options{NodeName: "node-1"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := (&file.Source{Path: "../examples/cluster.yaml"}).Start(ctx, tr); err != nil {
		t.Fatal(err)
	}
	s := tr.Snapshot()
	ep := func(ip string, port uint16, local bool) graph.Endpoint {
		return graph.Endpoint{IP: netip.MustParseAddr(ip), Port: port, Local: local, Ready: true, Serving: true}
	}
	s.ServicePorts = append(s.ServicePorts, &graph.ServicePort{
		Name:                  graph.ServicePortName{Namespace: "x", Name: "sctp", Port: "s", Protocol: graph.SCTP},
		ClusterIPs:            []netip.Addr{netip.MustParseAddr("10.96.50.1"), netip.MustParseAddr("fd00:96::50:1")},
		Port:                  9999,
		SessionAffinity:       graph.SessionAffinity{ClientIP: true, TimeoutSeconds: 86400},
		InternalTrafficPolicy: graph.PolicyCluster, ExternalTrafficPolicy: graph.PolicyCluster,
		InternalEndpoints: []graph.Endpoint{ep("10.244.1.90", 9999, true), ep("fd00:244:1::90", 9999, true)},
		UsableFamilies:    graph.FamilySet(0).With(graph.IPv4).With(graph.IPv6),
	})
	return s
}

func testOptions() Options {
	var o Options
	fs := newFlagSet()
	o.AddFlags(fs)
	o.GatewayIPs = []string{"10.244.1.1", "fd00:244:1::1"}
	o.UplinkPort = "uplink"
	o.UplinkNextHop = "0a:00:00:00:00:fe"
	return o
}

var countersRe = regexp.MustCompile(`(duration|n_packets|n_bytes|idle_age|hard_age)=[^ ,]*,? ?`)

func dumpNormalized(o *ovstest.OVS, br string) []string {
	var lines []string
	for _, out := range []string{o.Ofctl("dump-flows", br), o.Ofctl("dump-groups", br)} {
		for _, l := range strings.Split(out, "\n") {
			l = strings.TrimSpace(countersRe.ReplaceAllString(l, ""))
			if l != "" && !strings.HasPrefix(l, "OFPST_") && !strings.HasPrefix(l, "NXST_") {
				lines = append(lines, l)
			}
		}
	}
	slices.Sort(lines)
	return lines
}

type quietHandler struct{}

func (quietHandler) Connected(int)             {}
func (quietHandler) PacketIn(*ofctrl.PacketIn) {}

func TestRenderedPipelineLoadsIntoOVS(t *testing.T) {
	o := ovstest.Start(t)
	o.AddBridge("br-text")
	o.AddBridge("br-msgs")
	snap := exampleSnapshot(t)
	f := &Factory{Options: testOptions()}

	var out bytes.Buffer
	if err := f.Render(&out, dataplanes.Env{NodeName: "node-1"}, snap); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	groupsPart, flowsPart, ok := strings.Cut(text, "# flows\n")
	if !ok {
		t.Fatalf("render output has no flows section:\n%s", text)
	}
	dir := t.TempDir()
	gf, ff := filepath.Join(dir, "groups"), filepath.Join(dir, "flows")
	os.WriteFile(gf, []byte(groupsPart), 0o644)
	os.WriteFile(ff, []byte(flowsPart), 0o644)
	o.Ofctl("add-groups", "br-text", gf)
	o.Ofctl("add-flows", "br-text", ff)

	// The same state through OpenFlow messages in one bundle.
	cfg, err := f.Options.pipelineConfig()
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(cfg)
	m.setUplink(1)
	m.sync(snap)
	batch, err := m.st.pending()
	if err != nil {
		t.Fatal(err)
	}
	c := ofconn.Dial(o.MgmtSocket("br-msgs"), quietHandler{})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Commit(batch); err != nil {
		t.Fatal(err)
	}
	a, b := dumpNormalized(o, "br-text"), dumpNormalized(o, "br-msgs")
	if !slices.Equal(a, b) {
		t.Fatalf("rendered text and OpenFlow messages differ:\ntext:\n%s\nmessages:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	nFlows := strings.Count(flowsPart, "\n")
	if len(a) < nFlows || nFlows < 60 {
		t.Fatalf("only %d flows rendered / %d lines installed", nFlows, len(a))
	}
	t.Logf("%d flows and %d groups render, load with ovs-ofctl and match the messages", nFlows, strings.Count(groupsPart, "group_id="))
}
