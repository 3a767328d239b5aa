package conformance

import (
	"net/netip"
	"strings"
	"testing"
	"testing/fstest"
)

func TestBuiltInCasesLoadAndAreIndependent(t *testing.T) {
	cases, err := Cases()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 40 {
		t.Errorf("%d cases, the suite promises at least 40", len(cases))
	}
	owner := map[string]string{}
	for _, c := range cases {
		for _, fe := range c.Frontends() {
			if o, taken := owner[fe]; taken {
				t.Errorf("frontend %s is used by %s and %s: each case needs its own", fe, o, c.Name)
			}
			owner[fe] = c.Name
		}
	}
}

func TestBadCasesAreRefusedClearly(t *testing.T) {
	svc := `
    - apiVersion: v1
      kind: Service
      metadata: {name: s, namespace: x}
      spec: {clusterIP: 10.96.0.1, ports: [{port: 80}]}`
	for _, tc := range []struct{ name, body, want string }{
		{"unknown field", "cases:\n- name: a\n  about: b\n  colour: red\n  steps: []", `unknown field "colour"`},
		{"no about", "cases:\n- name: a\n  steps: []", "say what the case is about"},
		{"no steps", "cases:\n- name: a\n  about: b", "no steps"},
		{"no probes", "cases:\n- name: a\n  about: b\n  steps:\n  - apply:" + svc, "no probes"},
		{"bad object", "cases:\n- name: a\n  about: b\n  steps:\n  - apply: [{kind: Service, apiVersion: v1, metadata: {name: s, namespace: x}, spec: {clusterIP: 10.96.0.1, ports: [{port: 99999}]}}]\n    probes: [{from: c, to: '10.96.0.1:80', expect: {outcome: rejected}}]", "the core refuses"},
		{"unknown source", "cases:\n- name: a\n  about: b\n  steps:\n  - apply:" + svc + "\n    probes: [{from: mallory, to: '10.96.0.1:80', expect: {outcome: rejected}}]", `from "mallory"`},
		{"source without the family", "cases:\n- name: a\n  about: b\n  steps:\n  - apply:" + svc + "\n    probes: [{from: r1, to: '[fd00::1]:80', expect: {outcome: rejected}}]", "no address of"},
		{"bad destination", "cases:\n- name: a\n  about: b\n  steps:\n  - apply:" + svc + "\n    probes: [{from: c, to: 'node:0', expect: {outcome: rejected}}]", "bad port"},
		{"both expectations", "cases:\n- name: a\n  about: b\n  steps:\n  - apply:" + svc + "\n    probes: [{from: c, to: '10.96.0.1:80', expect: {outcome: rejected, reaches: [p1]}}]", "either reaches or outcome"},
		{"unknown backend", "cases:\n- name: a\n  about: b\n  steps:\n  - apply:" + svc + "\n    probes: [{from: c, to: '10.96.0.1:80', expect: {reaches: [c]}}]", "not a member of the world that serves"},
		{"too few connections for all", "cases:\n- name: a\n  about: b\n  steps:\n  - apply:" + svc + "\n    probes: [{from: c, to: '10.96.0.1:80', count: 10, expect: {reaches: [p1, p2], all: true}}]", "make at least 15 connections"},
		{"too few connections for distinct", "cases:\n- name: a\n  about: b\n  steps:\n  - apply:" + svc + "\n    probes: [{from: c, to: '10.96.0.1:80', count: 8, expect: {reaches: [p1, p2, p3], distinct: 2}}]", "make at least 10 connections"},
		{"bad delete", "cases:\n- name: a\n  about: b\n  steps:\n  - delete: [Pod x/y]\n    probes: [{from: c, to: '10.96.0.1:80', expect: {outcome: rejected}}]", "want \"Service ns/name\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadCases(fstest.MapFS{"cases/x.yaml": {Data: []byte(tc.body)}}, "cases/*.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	ans := func(ids ...string) []Answer {
		var out []Answer
		for _, id := range ids {
			switch id {
			case "refused":
				out = append(out, Answer{Outcome: Rejected})
			case "none":
				out = append(out, Answer{Outcome: Dropped, Detail: "timeout"})
			case "unreachable":
				out = append(out, Answer{Outcome: Unreachable, Detail: "no route to host"})
			case "failed":
				out = append(out, Answer{Outcome: Failed, Detail: "no pod p9"})
			default:
				out = append(out, Answer{Outcome: Answered, Identity: id})
			}
		}
		return out
	}
	from := func(src string, ids ...string) []Answer {
		out := ans(ids...)
		for i := range out {
			out[i].Source = netip.MustParseAddr(src)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		e    Expect
		as   []Answer
		ok   bool
	}{
		{"reaches by name", Expect{Reaches: []string{"p1", "p2"}}, ans("p1:8080", "p2:8081"), true},
		{"reaches by port", Expect{Reaches: []string{"p1:8080"}}, ans("p1:8081"), false},
		{"stranger", Expect{Reaches: []string{"p1"}}, ans("p1:8080", "r1:8080"), false},
		{"a failure among answers", Expect{Reaches: []string{"p1"}}, ans("p1:8080", "none"), false},
		{"all seen", Expect{Reaches: []string{"p1", "p2"}, All: true}, ans("p1:8080", "p2:8080"), true},
		{"all missing one", Expect{Reaches: []string{"p1", "p2"}, All: true}, ans("p1:8080", "p1:8080"), false},
		{"sticky", Expect{Reaches: []string{"p1", "p2"}, Sticky: true}, ans("p2:8080", "p2:8080"), true},
		{"not sticky", Expect{Reaches: []string{"p1", "p2"}, Sticky: true}, ans("p2:8080", "p1:8080"), false},
		{"distinct", Expect{Reaches: []string{"p1", "p2"}, Distinct: 2}, ans("p2:8080", "p2:8080"), false},
		{"rejected", Expect{Outcome: ExpectRejected}, ans("refused", "refused"), true},
		{"rejected but timed out", Expect{Outcome: ExpectRejected}, ans("refused", "none"), false},
		{"dropped", Expect{Outcome: ExpectDropped}, ans("none"), true},
		{"dropped but refused", Expect{Outcome: ExpectDropped}, ans("refused"), false},
		{"unreached either way", Expect{Outcome: ExpectUnreached}, ans("refused", "none"), true},
		{"unreached but answered", Expect{Outcome: ExpectUnreached}, ans("none", "p1:8080"), false},
		{"unreached: host unreachable", Expect{Outcome: ExpectUnreached}, ans("unreachable", "none"), true},
		{"unreached but the harness failed", Expect{Outcome: ExpectUnreached}, ans("none", "failed"), false},
		{"unreached but every probe failed", Expect{Outcome: ExpectUnreached}, ans("failed", "failed"), false},
		{"rejected but host unreachable", Expect{Outcome: ExpectRejected}, ans("unreachable"), false},
		{"dropped but host unreachable", Expect{Outcome: ExpectDropped}, ans("unreachable"), false},
		{"rejected but the harness failed", Expect{Outcome: ExpectRejected}, ans("failed"), false},
		{"reaches but the harness failed", Expect{Reaches: []string{"p1"}}, ans("p1:8080", "failed"), false},
		{"source as expected", Expect{Reaches: []string{"external"}, Source: "node"}, from("192.168.100.10", "external:9090"), true},
		{"source not masqueraded", Expect{Reaches: []string{"external"}, Source: "node"}, from("10.244.1.7", "external:9090"), false},
		{"source unknown to the harness", Expect{Reaches: []string{"r1"}, Source: "c"}, ans("r1:8080"), false},
		{"source of a member", Expect{Reaches: []string{"r1"}, Source: "c"}, from("10.244.1.7", "r1:8080", "r1:8080"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := judge(tc.e, netip.MustParseAddr("10.96.0.1"), tc.as)
			if (msg == "") != tc.ok {
				t.Fatalf("judge = %q, want ok=%v", msg, tc.ok)
			}
		})
	}
}
