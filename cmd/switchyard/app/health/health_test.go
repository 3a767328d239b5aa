package health

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/runner"
)

// TestProxyHealth: /healthz is upstream's (a change late), /readyz waits
// for the first sync too, /livez fails only on a sync loop stuck in one
// attempt.
func TestProxyHealth(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	synced := now.Add(-time.Hour)
	type codes struct{ healthz, readyz, livez int }
	cases := []struct {
		name   string
		status runner.Status
		want   codes
	}{
		{"starting: the initial list under way", runner.Status{}, codes{200, 503, 200}},
		{"starting: the list queued changes less than the timeout ago", runner.Status{QueuedSince: now.Add(-59 * time.Second)}, codes{200, 503, 200}},
		{"starting: a slow first sync", runner.Status{QueuedSince: now.Add(-3 * time.Minute), AttemptSince: now.Add(-3 * time.Minute)}, codes{503, 503, 200}},
		{"nothing queued", runner.Status{LastSuccess: synced}, codes{200, 200, 200}},
		{"queued for less than the timeout", runner.Status{LastSuccess: synced, QueuedSince: now.Add(-59 * time.Second)}, codes{200, 200, 200}},
		{"queued for longer than the timeout, the driver failing", runner.Status{LastSuccess: synced, QueuedSince: now.Add(-61 * time.Second), Failures: 4}, codes{503, 503, 200}},
		{"one attempt under way past the stall timeout", runner.Status{LastSuccess: synced, QueuedSince: now.Add(-6 * time.Minute), AttemptSince: now.Add(-5*time.Minute - time.Second)}, codes{503, 503, 503}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &Proxy{Status: func() runner.Status { return tc.status }, Timeout: time.Minute, StallTimeout: 5 * time.Minute, Now: func() time.Time { return now }}
			for path, want := range map[string]int{"/healthz": tc.want.healthz, "/readyz": tc.want.readyz, "/livez": tc.want.livez} {
				rec := httptest.NewRecorder()
				p.Mux().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
				if rec.Code != want {
					t.Errorf("%s: %d, want %d", path, rec.Code, want)
				}
				var rep map[string]any
				if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil || rep["currentTime"] == nil {
					t.Errorf("%s body %q", path, rec.Body.String())
				}
			}
		})
	}
}

func freePort(t *testing.T) uint16 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

func lbPort(name string, hc uint16, eps ...graph.Endpoint) *graph.ServicePort {
	return &graph.ServicePort{
		Name:                  graph.ServicePortName{Namespace: "ns", Name: name, Port: "p", Protocol: graph.TCP},
		ClusterIPs:            []netip.Addr{netip.MustParseAddr("10.96.0.1")},
		Port:                  80,
		NodePort:              30000,
		ExternalTrafficPolicy: graph.PolicyLocal,
		HealthCheckNodePort:   hc,
		ExternalEndpoints:     graph.EndpointListOf(eps...),
	}
}

func ep(ip string, local, ready bool) graph.Endpoint {
	return graph.Endpoint{IP: netip.MustParseAddr(ip), Port: 8080, Local: local, Ready: ready, Serving: true, Terminating: !ready}
}

type reply struct {
	code  int
	count int
	name  string
}

func probe(t *testing.T, port uint16) reply {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		return reply{}
	}
	defer resp.Body.Close()
	var rep serviceReport
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return reply{resp.StatusCode, rep.LocalEndpoints, rep.Service.Name}
}

func TestServiceHealthCheckPorts(t *testing.T) {
	p1, p2 := freePort(t), freePort(t)
	s := &Services{BindIP: "127.0.0.1"}
	defer s.Close()

	s.Sync(graph.Snapshot{ServicePorts: []*graph.ServicePort{
		lbPort("a", p1, ep("10.244.0.1", true, true), ep("10.244.0.2", true, false)),
		lbPort("b", p2),
	}})
	if r := probe(t, p1); r != (reply{200, 1, "a"}) {
		t.Fatalf("a: %+v (terminating local endpoints do not count)", r)
	}
	if r := probe(t, p2); r != (reply{503, 0, "b"}) {
		t.Fatalf("b: %+v", r)
	}

	// A delta updates counts in place and closes what is gone.
	s.Apply(graph.Delta{
		Updated: []graph.Update{{Old: lbPort("b", p2), New: lbPort("b", p2, ep("10.244.0.3", true, true), ep("10.244.0.4", false, true))}},
		Removed: []*graph.ServicePort{lbPort("a", p1)},
	})
	if r := probe(t, p2); r != (reply{200, 1, "b"}) {
		t.Fatalf("b after delta: %+v", r)
	}
	if r := probe(t, p1); r.code != 0 {
		t.Fatalf("a's port still answers after removal: %+v", r)
	}
}

func TestServiceHealthRetriesATakenPort(t *testing.T) {
	port := freePort(t)
	squatter, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	s := &Services{BindIP: "127.0.0.1"}
	defer s.Close()
	s.Sync(graph.Snapshot{ServicePorts: []*graph.ServicePort{lbPort("a", port, ep("10.244.0.1", true, true))}})
	if f := s.Failures(); f[port] == nil {
		t.Fatalf("failures = %v, want the taken port", f)
	}
	squatter.Close()
	s.Apply(graph.Delta{}) // any later update retries
	if f := s.Failures(); len(f) != 0 {
		t.Fatalf("failures after the port freed: %v", f)
	}
	if r := probe(t, port); r != (reply{200, 1, "a"}) {
		t.Fatalf("probe %+v", r)
	}
}

func TestRetriedPortFailuresAreLoggedOnce(t *testing.T) {
	a, b := serviceKey{"ns", "a"}, serviceKey{"ns", "b"}
	inUse, denied := errors.New("bind: address already in use"), errors.New("bind: permission denied")
	for _, tc := range []struct {
		name     string
		prev     failure
		had      bool
		svc      serviceKey
		err      error
		want     failure
		wantLoud bool
	}{
		{"first failure", failure{}, false, a, inUse, failure{a, inUse, 1}, true},
		{"the same error again", failure{a, inUse, 3}, true, a, inUse, failure{a, inUse, 4}, false},
		{"another error", failure{a, inUse, 3}, true, a, denied, failure{a, denied, 4}, true},
		{"the port now another Service's", failure{a, inUse, 3}, true, b, inUse, failure{b, inUse, 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, loud := retried(tc.prev, tc.had, tc.svc, tc.err)
			if got != tc.want || loud != tc.wantLoud {
				t.Fatalf("retried = %+v, loud %v; want %+v, loud %v", got, loud, tc.want, tc.wantLoud)
			}
		})
	}
}

func TestServiceHealthReportsUnhealthyProxy(t *testing.T) {
	port := freePort(t)
	s := &Services{BindIP: "127.0.0.1", ProxyHealthy: func() bool { return false }}
	defer s.Close()
	s.Sync(graph.Snapshot{ServicePorts: []*graph.ServicePort{lbPort("a", port, ep("10.244.0.1", true, true))}})
	if r := probe(t, port); r.code != 503 || r.count != 1 {
		t.Fatalf("probe %+v, want 503 while the proxy is unhealthy", r)
	}
}

// Parts the driver holds back leave the proxy healthy: /healthz answers
// 200 and lists them, at most maxDegradedShown and then how many more.
func TestDegradedPartsAreHealthyAndListed(t *testing.T) {
	var lines []string
	for i := range 25 {
		lines = append(lines, fmt.Sprintf("ns/svc-%d:http/TCP: OVSRefused: the switch refused its group", i))
	}
	p := &Proxy{Status: func() runner.Status {
		return runner.Status{Degraded: lines, LastError: errors.New("ovs: refused"), LastSuccess: time.Now()}
	}, Timeout: time.Minute}
	type report struct {
		Degraded      []string
		DegradedParts int
		LastError     string
	}
	ask := func(from string) (int, report) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.RemoteAddr = from
		p.Mux().ServeHTTP(rec, req)
		var rep report
		if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		return rec.Code, rep
	}
	want := report{Degraded: append(append([]string{}, lines[:maxDegradedShown]...), "and 5 more"), LastError: "ovs: refused"}
	for _, from := range []string{"127.0.0.1:40000", "[::1]:40000"} {
		if code, rep := ask(from); code != 200 || !reflect.DeepEqual(rep, want) {
			t.Errorf("from %s: %d %+v, want 200 %+v", from, code, rep, want)
		}
	}
	// Off the node: healthy, and how many parts are held, but no names
	// and no error text.
	if code, rep := ask("192.0.2.7:40000"); code != 200 || !reflect.DeepEqual(rep, report{DegradedParts: 25}) {
		t.Errorf("from off the node: %d %+v, want 200 with only the count", code, rep)
	}
}
