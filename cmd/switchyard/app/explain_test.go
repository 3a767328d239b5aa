package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard-proxy/switchyard/core/explain"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/hns/hnssim"
	"github.com/switchyard-proxy/switchyard/hns/hnstrace" // the hns tracers, as cmd/switchyard/builtin registers them
)

// routeView is what a test checks of a route: where it goes and, per
// endpoint, used or the rule that left it out.
type routeView struct {
	ServicePort, Frontend, List, Policy, Action, Topology, Source string            // Source: sourceSeen/masqueradeWhy
	Endpoints                                                     map[string]string // endpoint: "used" or the exclusion
}

// explain's answers on the example cluster, read from its JSON: every
// frontend kind, both origins, each traffic policy, topology, reject,
// drop, and the source-range filter.
func TestExplainAnswers(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		want     []routeView
	}{
		{"10.244.1.9", "10.96.10.20:80", []routeView{{"shop/frontend:http/TCP", "ClusterIP", "Internal", "Cluster", "forward", "None/NoHints", "client/FromAPod",
			map[string]string{"10.244.1.10:8080": "used", "10.244.2.10:8080": "TerminatingWhileReady", "10.244.3.10:8080": "used"}}}},
		{"198.51.100.7", "203.0.113.10:443", []routeView{{"shop/checkout:https/TCP", "LoadBalancerIP", "External", "Local", "forward", "None/NoHints", "client/ExternalPolicyLocal",
			map[string]string{"10.244.1.20:8443": "used", "10.244.2.20:8443": "OnAnotherNode"}}}},
		{"192.0.2.1", "203.0.113.10:443", []routeView{{"shop/checkout:https/TCP", "LoadBalancerIP", "External", "Local", "drop-source-range", "None/NoHints", "client/ExternalPolicyLocal",
			map[string]string{"10.244.1.20:8443": "used", "10.244.2.20:8443": "OnAnotherNode"}}}},
		{"node", "192.168.10.11:30443", []routeView{{"shop/checkout:https/TCP", "NodePort", "ShortCircuit", "Cluster", "forward", "None/NoHints", "node/ShortCircuitFromTheNode",
			map[string]string{"10.244.1.20:8443": "used", "10.244.2.20:8443": "used"}}}},
		{"10.244.1.9", "10.96.20.6:9090", []routeView{{"shop/catalog:grpc/TCP", "ClusterIP", "Internal", "Cluster", "forward", "PreferSameZone/HintsForThisZone", "client/FromAPod",
			map[string]string{"10.244.1.40:9090": "used", "10.244.2.40:9090": "HintedForOtherZones", "10.244.3.40:9090": "HintedForOtherZones"}}}},
		{"10.244.1.9", "10.96.20.7:80", []routeView{{"shop/payments:http/TCP", "ClusterIP", "Internal", "Local", "drop", "None/ClusterNotUsed", "client/FromAPod",
			map[string]string{"10.244.2.50:8080": "OnAnotherNode"}}}},
		{"10.244.1.9", "10.96.20.8:80", []routeView{{"shop/search:http/TCP", "ClusterIP", "Internal", "Cluster", "reject", "None/NoReadyEndpoints", "client/FromAPod",
			map[string]string{}}}},
		{"10.244.1.9", "10.96.20.8:81", nil},
	} {
		t.Run(tc.from+"->"+tc.to, func(t *testing.T) {
			code, out, errOut := runCmd(t, "explain", "--file", clusterFile, "--node-name", "node-1", "--from", tc.from, "--to", tc.to, "-o", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var x explain.Explanation
			if err := json.Unmarshal([]byte(out), &x); err != nil {
				t.Fatal(err)
			}
			var got []routeView
			for _, r := range x.Routes {
				if r.Disagreement != "" {
					t.Errorf("%s: the explanation disagrees with the graph: %s", r.ServicePort, r.Disagreement)
				}
				v := routeView{r.ServicePort, string(r.Frontend), string(r.List), r.Policy, string(r.Action),
					r.Topology.Mode + "/" + string(r.Topology.Why), r.SourceSeen + "/" + string(r.MasqueradeWhy), map[string]string{}}
				for _, e := range r.Endpoints {
					v.Endpoints[e.Endpoint] = string(e.Excluded)
					if e.Used {
						v.Endpoints[e.Endpoint] = "used"
					}
				}
				got = append(got, v)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// The table for people, as the README's "Debugging a Service" shows it.
func TestExplainTableMatchesFixture(t *testing.T) {
	code, out, errOut := runCmd(t, "explain", "--file", clusterFile, "--node-name", "node-1", "--from", "10.244.1.9", "--to", "10.96.10.20:80")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	matchesGolden(t, filepath.Join("testdata", "explain.table"), out)
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), out) {
		t.Error("README.md's \"Debugging a Service\" does not show this output")
	}
}

// docs/explain.md's JSON example uses the real field names.
func TestExplainJSONDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/explain.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "```json\n")
	example, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("docs/explain.md has no JSON example")
	}
	dec := json.NewDecoder(strings.NewReader(example))
	dec.DisallowUnknownFields()
	var x explain.Explanation
	if err := dec.Decode(&x); err != nil {
		t.Fatalf("docs/explain.md's JSON example: %v", err)
	}
	if len(x.Routes) == 0 || len(x.Routes[0].Endpoints) == 0 {
		t.Fatal("docs/explain.md's JSON example shows no route with endpoints")
	}
}

// Bad queries are usage errors that say what is wrong.
func TestExplainRefusesBadQueries(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--to", "10.96.0.10:53"}, "--from is required"},
		{[]string{"--from", "10.244.1.9", "--to", "10.96.0.10"}, "want IP:PORT"},
		{[]string{"--from", "10.244.1.9", "--to", "10.96.0.10:53/icmp"}, "want TCP, UDP or SCTP"},
		{[]string{"--from", "fd00::1", "--to", "10.96.0.10:53"}, "different IP families"},
		{[]string{"--from", "a-pod", "--to", "10.96.0.10:53"}, "want an IP address or node"},
	} {
		code, _, errOut := runCmd(t, append([]string{"explain", "--file", clusterFile, "--node-name", "node-1"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 saying %q", tc.args, code, errOut, tc.want)
		}
	}
}

// A running switchyard answers from its own graph what the offline
// command answers from the same objects; a bad query is refused, saying
// why.
func TestExplainAsksARunningSwitchyard(t *testing.T) {
	src := sourceOptions{file: clusterFile, nodeName: "node-1"}
	v, err := src.snapshotOnce(t.Context(), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(explainHandler(v.tr, "test-memory", &memoryDriver{}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, q := range [][]string{{"10.244.1.9", "10.96.10.20:80"}, {"node", "192.168.10.11:30443"}, {"192.0.2.1", "203.0.113.10:443"}} {
		_, offline, _ := runCmd(t, "explain", "--file", clusterFile, "--node-name", "node-1", "--from", q[0], "--to", q[1])
		code, running, errOut := runCmd(t, "explain", "--running", addr, "--from", q[0], "--to", q[1])
		if code != 0 || running != offline {
			t.Errorf("%v: exit %d (%s), running:\n%s\noffline:\n%s", q, code, errOut, running, offline)
		}
	}
	code, _, errOut := runCmd(t, "explain", "--running", addr, "--from", "10.244.1.9", "--to", "10.96.10.20")
	if code == 0 || !strings.Contains(errOut, "400") || !strings.Contains(errOut, "want IP:PORT") {
		t.Errorf("a bad query: exit %d, %q; want the 400 and why", code, errOut)
	}
}

// Offline, the HNS simulator programmed by the HNS driver agrees with the
// graph on every kind of query: it reaches only the endpoints the graph
// uses, and some.
func TestExplainWithTheHNSSimulator(t *testing.T) {
	for _, q := range [][]string{{"10.244.1.9", "10.96.10.20:80"}, {"198.51.100.7", "203.0.113.10:443"}, {"node", "192.168.10.11:30443"},
		{"10.244.1.9", "10.96.20.6:9090"}, {"10.244.1.9", "10.96.20.8:80"}, {"fd00:244:1::9", "[fd00:96::5]:80"}, {"10.244.1.9", "10.96.0.10:53/UDP"}} {
		code, out, errOut := runCmd(t, "explain", "--file", clusterFile, "--node-name", "node-1", "--dataplane", "hns", "--from", q[0], "--to", q[1], "-o", "json")
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", q, code, errOut)
		}
		var x explain.Explanation
		if err := json.Unmarshal([]byte(out), &x); err != nil {
			t.Fatal(err)
		}
		if x.Dataplane == nil || x.Dataplane.Name != "hns" || !x.Dataplane.Simulated || x.Dataplane.Disagreement != "" || len(x.Dataplane.Reached) == 0 {
			t.Errorf("%v: dataplane %+v", q, x.Dataplane)
		}
		// HNS SNATs a pod's connection to a ClusterIP (no DSR here), which
		// upstream does not: said as the gap the driver declares.
		if q[1] == "10.96.10.20:80" && !strings.Contains(x.Dataplane.Note, "by design, without DSR") {
			t.Errorf("%v: note %q; want HNS's declared SNAT", q, x.Dataplane.Note)
		}
	}
	code, _, errOut := runCmd(t, "explain", "--file", clusterFile, "--node-name", "node-1", "--dataplane", "ovs", "--from", "10.244.1.9", "--to", "10.96.10.20:80")
	if code != 2 || !strings.Contains(errOut, "live bridge") {
		t.Errorf("--dataplane ovs offline: exit %d, %q", code, errOut)
	}
}

// tracingDriver is a running driver whose dataplane answers a trace with
// reach (or err).
type tracingDriver struct {
	dataplanes.Driver
	reach, seen string // seen: the source the backends see (the client's when empty)
	err         error
}

func (d *tracingDriver) TraceLive(_ context.Context, c graph.Connection, n int) (dataplanes.Trace, error) {
	if d.err != nil {
		return dataplanes.Trace{}, d.err
	}
	seen := d.seen
	if seen == "" {
		seen = c.Src.String()
	}
	return dataplanes.Trace{Model: "a test's", Reached: map[string]int{d.reach: n}, Backends: []string{d.reach}, SrcSeen: seen,
		Path: []dataplanes.TraceStep{{Table: "ServiceLB", Match: "tcp,nw_dst=10.96.10.20", Did: "DNAT to " + d.reach}}}, nil
}

// countingDriver is a tracingDriver that also counts (dataplanes.Counter).
type countingDriver struct {
	tracingDriver
	counts map[graph.ServicePortName]dataplanes.ServicePortCounts
}

func (d *countingDriver) Counters(context.Context) (map[graph.ServicePortName]dataplanes.ServicePortCounts, error) {
	return d.counts, nil
}

// --running with --dataplane asks the running driver's dataplane and
// compares its answer with the graph's; a driver that cannot be asked, or
// another driver's name, is refused; a trace that fails is said.
func TestExplainAsksTheRunningDataplane(t *testing.T) {
	src := sourceOptions{file: clusterFile, nodeName: "node-1"}
	v, err := src.snapshotOnce(t.Context(), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(d dataplanes.Driver, dataplane string) (int, string, string) {
		srv := httptest.NewServer(explainHandler(v.tr, "test-tracing", d))
		defer srv.Close()
		return runCmd(t, "explain", "--running", strings.TrimPrefix(srv.URL, "http://"), "--dataplane", dataplane,
			"--from", "10.244.1.9", "--to", "10.96.10.20:80")
	}
	for _, tc := range []struct {
		name      string
		d         dataplanes.Driver
		dataplane string
		code      int
		want      string
	}{
		{"agrees", &tracingDriver{reach: "10.244.1.10:8080"}, "test-tracing", 0, "ServiceLB  tcp,nw_dst=10.96.10.20  DNAT to 10.244.1.10:8080\n  agrees with the graph"},
		{"disagrees", &tracingDriver{reach: "10.244.2.10:8080"}, "test-tracing", 0, "BUG: the dataplane disagrees with the graph: reached 10.244.2.10:8080"},
		{"SNATs where upstream does not", &tracingDriver{reach: "10.244.1.10:8080", seen: "10.244.1.1"}, "test-tracing", 0,
			"BUG: the dataplane disagrees with the graph: the backends see the source 10.244.1.1; upstream keeps the client's (FromAPod)"},
		{"cannot trace", &tracingDriver{err: errors.New("no such pod")}, "test-tracing", 0, "could not be asked: no such pod"},
		{"counts", &countingDriver{tracingDriver{reach: "10.244.1.10:8080"}, map[graph.ServicePortName]dataplanes.ServicePortCounts{
			{Namespace: "shop", Name: "frontend", Port: "http", Protocol: graph.TCP}: {Connections: 7, Endpoints: map[netip.AddrPort]uint64{netip.MustParseAddrPort("10.244.1.10:8080"): 7}},
			{Namespace: "shop", Name: "other", Port: "http", Protocol: graph.TCP}:    {Connections: 9}}}, "test-tracing", 0,
			"counted so far for shop/frontend:http/TCP: 7 connections, 0 rejected, 0 dropped\n    7  10.244.1.10:8080\n  agrees"},
		{"no live tracer", &memoryDriver{}, "test-tracing", 1, "cannot trace its live dataplane"},
		{"another driver", &tracingDriver{}, "ovs", 1, "this switchyard runs the test-tracing driver"},
	} {
		code, out, errOut := ask(tc.d, tc.dataplane)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("%s: exit %d, %s%s; want exit %d saying %q", tc.name, code, out, errOut, tc.code, tc.want)
		}
	}
}

// A running HNS driver answers --dataplane hns from the load balancers its
// HNS holds (here a simulated HNS stands for Windows'): the answer agrees
// with the graph and says what judged it.
func TestExplainAsksARunningHNSDriver(t *testing.T) {
	src := sourceOptions{file: clusterFile, nodeName: "node-1"}
	v, err := src.snapshotOnce(t.Context(), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	snap := v.tr.Snapshot()
	d, err := hnstrace.Program(t.Context(), hnstrace.SimulatedNode(snap, hnssim.Windows2025), snap, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	srv := httptest.NewServer(explainHandler(v.tr, "hns", d))
	defer srv.Close()
	code, out, errOut := runCmd(t, "explain", "--running", strings.TrimPrefix(srv.URL, "http://"), "--dataplane", "hns",
		"--from", "10.244.1.9", "--to", "10.96.10.20:80")
	for _, want := range []string{"load balancers and L2Bridge network cbr0 the live HNS 15.5 holds", "agrees with the graph"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d, %s%s; want it to say %q", code, out, errOut, want)
		}
	}
}
