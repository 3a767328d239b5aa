package conformance

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// lackingFactory is allFactory declaring one service-port capability
// missing.
type lackingFactory struct {
	allFactory
	lacks dataplanes.Capability
}

func (f lackingFactory) Capabilities() dataplanes.Capabilities {
	return dataplanes.Capabilities{
		Supported: slices.DeleteFunc(slices.Clone(dataplanes.All), func(c dataplanes.Capability) bool { return c == f.lacks }),
		Gaps:      map[dataplanes.Capability]string{f.lacks: "left out for the test"},
	}
}

// countingHarness is the graph model counting the connections it is
// asked to make, by destination.
type countingHarness struct {
	*ModelHarness
	sent map[string]int
}

func (c *countingHarness) Probe(ctx context.Context, p Probe) Answer {
	c.sent[p.Dst.String()]++
	return c.ModelHarness.Probe(ctx, p)
}

// The objects of the cases below.
const (
	serviceA   = "\n    - {apiVersion: v1, kind: Service, metadata: {name: a, namespace: x}, spec: {clusterIP: 10.96.200.1, ports: [{name: http, port: 80, targetPort: 8080}]}}"
	serviceB   = "\n    - {apiVersion: v1, kind: Service, metadata: {name: b, namespace: x}, spec: {clusterIP: 10.96.200.2, ports: [{name: http, port: 80, targetPort: 8080}]}}"
	sliceAtoP1 = "\n    - {apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: a-1, namespace: x, labels: {kubernetes.io/service-name: a}}, addressType: IPv4, ports: [{name: http, port: 8080}], endpoints: [{addresses: [10.244.1.5], nodeName: node-1, conditions: {ready: true}}]}"
	sliceAtoP2 = "\n    - {apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: a-1, namespace: x, labels: {kubernetes.io/service-name: a}}, addressType: IPv4, ports: [{name: http, port: 8080}], endpoints: [{addresses: [10.244.1.6], nodeName: node-1, conditions: {ready: true}}]}"
	// An endpoint neither ready nor serving: the core finds no usable
	// endpoint, so the graph's service port needs reject-no-endpoints
	// whatever the case expects (as it did when a broken core lost the
	// terminating fallback).
	sliceANotReady = "\n    - {apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: a-1, namespace: x, labels: {kubernetes.io/service-name: a}}, addressType: IPv4, ports: [{name: http, port: 8080}], endpoints: [{addresses: [10.244.1.5], nodeName: node-1, conditions: {ready: false, serving: false}}]}"
)

func probeOf(to, expect string) string {
	return "\n    - {from: c, to: '" + to + "', count: 3, expect: " + expect + "}"
}

// TestStepsAreJudgedOnTheirOwn: whether a step is judged depends on the
// case, not on the graph the core made, and a step that cannot be judged
// leaves the case's other steps judged — after its changes were made.
func TestStepsAreJudgedOnTheirOwn(t *testing.T) {
	// Step 2 moves a's endpoint to p2 and expects b, without endpoints, to
	// reject: a driver that cannot reject cannot be judged on step 2.
	threeSteps := func(step3 string) string {
		return "  steps:\n  - apply:" + serviceA + sliceAtoP1 + "\n    probes:" + probeOf("10.96.200.1:80", "{reaches: [p1]}") +
			"\n  - apply:" + sliceAtoP2 + serviceB + "\n    probes:" + probeOf("10.96.200.1:80", "{reaches: [p2]}") + probeOf("10.96.200.2:80", "{outcome: rejected}") +
			"\n  - probes:" + probeOf("10.96.200.1:80", step3)
	}
	for _, tc := range []struct {
		name     string
		lacks    dataplanes.Capability // "" for none
		body     string
		status   Status
		skipped  []SkippedStep
		failures []string // substrings, one per failure
		notSent  string   // a destination no probe may reach
	}{
		{"the other steps pass", dataplanes.RejectNoEndpoint, threeSteps("{reaches: [p2]}"), Pass,
			[]SkippedStep{{2, "reject-no-endpoints: left out for the test"}}, nil, "10.96.200.2:80"},
		// p1 is what step 3 would see had step 2's change not been made.
		{"a later step is judged after the skipped step's change", dataplanes.RejectNoEndpoint, threeSteps("{reaches: [p1]}"), Fail,
			[]SkippedStep{{2, "reject-no-endpoints: left out for the test"}}, []string{"step 3 probe 1"}, "10.96.200.2:80"},
		{"every step judged where nothing is lacking", "", threeSteps("{reaches: [p2]}"), Pass, nil, nil, ""},
		// The graph needs reject-no-endpoints, the case does not: it is
		// judged, and fails, rather than being unsupported.
		{"the core's graph does not make a case unsupported", dataplanes.RejectNoEndpoint,
			"  steps:\n  - apply:" + serviceA + sliceANotReady + "\n    probes:" + probeOf("10.96.200.1:80", "{reaches: [p1]}"), Fail,
			nil, []string{"step 1 probe 1"}, ""},
		{"no step can be judged", dataplanes.RejectNoEndpoint,
			"  steps:\n  - apply:" + serviceB + "\n    probes:" + probeOf("10.96.200.2:80", "{outcome: rejected}"), Unsupported,
			[]SkippedStep{{1, "reject-no-endpoints: left out for the test"}}, nil, "10.96.200.2:80"},
		// The graph model has no clock: only the step that pauses is skipped.
		{"a probe the harness cannot send skips its step only", "",
			"  steps:\n  - apply:" + serviceA + sliceAtoP1 + "\n    probes:" + probeOf("10.96.200.1:80", "{reaches: [p1]}") +
				"\n  - probes: [{from: c, to: '10.96.200.1:80', count: 2, interval: 1s, expect: {reaches: [p1]}}]", Pass,
			[]SkippedStep{{2, "harness: a graph model has no clock: timeouts cannot be observed"}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cases, err := LoadCases(fstest.MapFS{"cases/x.yaml": {Data: []byte("cases:\n- name: a\n  about: b\n" + tc.body)}}, "cases/*.yaml")
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			m := modelHarness("lacking", rec)
			if tc.lacks != "" {
				m.F = lackingFactory{lacks: tc.lacks}
			}
			h := &countingHarness{ModelHarness: m, sent: map[string]int{}}
			r := Check(context.Background(), h, cases[0])
			if r.Status != tc.status || !slices.Equal(r.Skipped, tc.skipped) || r.Steps != len(cases[0].Steps) {
				t.Errorf("status %s, skipped %v of %d steps; want %s, skipped %v", r.Status, r.Skipped, r.Steps, tc.status, tc.skipped)
			}
			if len(r.Failures) != len(tc.failures) {
				t.Fatalf("failures %q, want %d", r.Failures, len(tc.failures))
			}
			for i, f := range tc.failures {
				if !strings.Contains(r.Failures[i], f) {
					t.Errorf("failure %q does not name %q", r.Failures[i], f)
				}
			}
			if tc.notSent != "" && h.sent[tc.notSent] > 0 {
				t.Errorf("%d connections to %s, a frontend only a skipped step probes", h.sent[tc.notSent], tc.notSent)
			}
			if tc.status == Unsupported && r.Reason != tc.skipped[0].Reason {
				t.Errorf("reason %q, want %q", r.Reason, tc.skipped[0].Reason)
			}
		})
	}
}

// droppingHarness drops every connection and diagnoses each drop.
type droppingHarness struct {
	*ModelHarness
	diagnosed int
}

func (d *droppingHarness) Probe(context.Context, Probe) Answer {
	return Answer{Outcome: Dropped, Detail: "nothing within 2s"}
}

func (d *droppingHarness) Diagnose(Probe) string {
	d.diagnosed++
	return "the datapath's drop counter moved"
}

// A Diagnoser is asked about a connection dropped where the case expects
// an answer, and what it says joins the failure; a drop the case expects
// is not diagnosed, and passes.
func TestDropsWhereAnAnswerWasExpectedAreDiagnosed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		expect    string
		status    Status
		diagnosed int
	}{
		{"an answer expected", "{reaches: [p1]}", Fail, 3},
		{"a drop expected", "{outcome: dropped}", Pass, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := "  steps:\n  - apply:" + serviceA + sliceAtoP1 + "\n    probes:" + probeOf("10.96.200.1:80", tc.expect)
			cases, err := LoadCases(fstest.MapFS{"cases/x.yaml": {Data: []byte("cases:\n- name: a\n  about: b\n" + body)}}, "cases/*.yaml")
			if err != nil {
				t.Fatal(err)
			}
			h := &droppingHarness{ModelHarness: modelHarness("dropping", &recorder{})}
			r := Check(context.Background(), h, cases[0])
			if r.Status != tc.status || h.diagnosed != tc.diagnosed {
				t.Fatalf("status %s, %d diagnosed (failures %q); want %s, %d", r.Status, h.diagnosed, r.Failures, tc.status, tc.diagnosed)
			}
			if tc.status == Fail && !strings.Contains(r.Failures[0], "right after: the datapath's drop counter moved") {
				t.Errorf("failure %q lacks the diagnosis", r.Failures[0])
			}
		})
	}
}
