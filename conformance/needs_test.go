package conformance

import (
	"slices"
	"testing"
	"testing/fstest"

	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// TestNeedsAreReadFromTheCase derives, step by step, what built-in cases
// need from their objects, probes and declarations alone.
func TestNeedsAreReadFromTheCase(t *testing.T) {
	cases, err := Cases()
	if err != nil {
		t.Fatal(err)
	}
	const (
		v4, v6, tcp, udp   = dataplanes.IPv4, dataplanes.IPv6, dataplanes.TCP, dataplanes.UDP
		np, ext, lb        = dataplanes.NodePort, dataplanes.ExternalIPs, dataplanes.LoadBalancerIPs
		ranges, reject     = dataplanes.SourceRanges, dataplanes.RejectNoEndpoint
		affinity, timeout  = dataplanes.SessionAffinity, dataplanes.AffinityTimeout
		etpLocal, shortcut = dataplanes.ExternalLocal, dataplanes.ShortCircuit
		itpLocal, mixed    = dataplanes.InternalLocal, dataplanes.MixedTargetPorts
		podNet             = dataplanes.PodNetwork
	)
	type caps = []dataplanes.Capability
	for _, tc := range []struct {
		name string
		want []caps // per step
	}{
		{"clusterip-tcp", []caps{{v4, tcp}}},
		// TCP and UDP ports of one Service, each named target port one number.
		{"multi-port", []caps{{v4, tcp, udp}}},
		{"named-port-differs-per-endpoint", []caps{{v4, tcp, mixed}}},
		// Only the last step expects a rejection.
		{"second-slice-added-and-removed", []caps{{v4, tcp}, {v4, tcp}, {v4, tcp, reject}}},
		// The IPv6 probe expects the rejection; the family is the probe's.
		{"dual-stack-one-family-empty", []caps{{v4, v6, tcp, reject}}},
		{"loadbalancer-without-endpoints-rejects", []caps{{v4, tcp, np, lb, reject}}},
		// Dropped is what a driver that cannot reject does anyway.
		{"itp-local-no-local-endpoint-drops", []caps{{v4, tcp, itpLocal}}},
		// Source ranges only through the ingress IP.
		{"loadbalancer-source-ranges", []caps{{v4, tcp, np, lb, ranges}}},
		// The timeout only for the probe that pauses.
		{"affinity-timeout-expires", []caps{{v4, tcp, affinity, timeout}}},
		{"affinity-endpoint-removed", []caps{{v4, tcp, affinity}, {v4, tcp, affinity}}},
		// Short-circuit only from this node's pods; from outside ETP Local alone.
		{"etp-local-short-circuit", []caps{{v4, tcp, np, lb, etpLocal, shortcut}}},
		{"etp-local-from-outside", []caps{{v4, tcp, np, lb, etpLocal}}},
		// ITP Local through the ClusterIP only.
		{"itp-local-external-unaffected", []caps{{v4, tcp, np, itpLocal}}},
		// What the core computes (the terminating fallback) plays no part.
		{"terminating-fallback-cluster", []caps{{v4, tcp}}},
		{"terminating-not-serving-rejects", []caps{{v4, tcp, reject}}},
		// A deleted Service's frontends are no frontends any more.
		{"service-deleted", []caps{{v4, tcp, np}, {v4, tcp}}},
		{"external-ip-is-the-node", []caps{{v4, tcp, ext}}},
		{"ipv6-udp-and-nodeport", []caps{{v6, tcp, udp, np}}},
		// requires is declared for every step.
		{"pod-to-node", []caps{{podNet, v4, v6, tcp}}},
		{"pod-to-pod-across-nodes", []caps{{podNet, v4, tcp, udp}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := slices.IndexFunc(cases, func(c Case) bool { return c.Name == tc.name })
			if k < 0 {
				t.Fatalf("no case %s", tc.name)
			}
			if got := cases[k].Needs(); !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("needs %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNeedsOfWrittenCases covers what the built-in cases do not: a
// declared ignoresGaps, a targetPort by number whose slices agree, and
// mixed ports that appear only once a later step adds a slice.
func TestNeedsOfWrittenCases(t *testing.T) {
	const svc = `
    - {apiVersion: v1, kind: Service, metadata: {name: s, namespace: x}, spec: {clusterIP: 10.96.200.1, sessionAffinity: ClientIP, ports: [{name: http, port: 80, targetPort: web}]}}
    - {apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: s-1, namespace: x, labels: {kubernetes.io/service-name: s}}, addressType: IPv4, ports: [{name: http, port: 8080}], endpoints: [{addresses: [10.244.1.5], conditions: {ready: true}}]}`
	const otherPort = `
    - {apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: s-2, namespace: x, labels: {kubernetes.io/service-name: s}}, addressType: IPv4, ports: [{name: http, port: 8081}], endpoints: [{addresses: [10.244.1.6], conditions: {ready: true}}]}`
	const probe = "\n    probes: [{from: c, to: '10.96.200.1:80', count: 3, interval: 1s, expect: {reaches: [p1, p2]}}]"
	for _, tc := range []struct {
		name, body string
		want       [][]dataplanes.Capability
	}{
		{"affinity with a pause", "  steps:\n  - apply:" + svc + probe,
			[][]dataplanes.Capability{{dataplanes.IPv4, dataplanes.TCP, dataplanes.SessionAffinity, dataplanes.AffinityTimeout}}},
		{"ignoresGaps leaves the timeout out", "  ignoresGaps: [affinity-timeout]\n  steps:\n  - apply:" + svc + probe,
			[][]dataplanes.Capability{{dataplanes.IPv4, dataplanes.TCP, dataplanes.SessionAffinity}}},
		{"a second slice on another port", "  ignoresGaps: [affinity-timeout]\n  steps:\n  - apply:" + svc + probe + "\n  - apply:" + otherPort + probe,
			[][]dataplanes.Capability{{dataplanes.IPv4, dataplanes.TCP, dataplanes.SessionAffinity},
				{dataplanes.IPv4, dataplanes.TCP, dataplanes.SessionAffinity, dataplanes.MixedTargetPorts}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cases, err := LoadCases(fstest.MapFS{"cases/x.yaml": {Data: []byte("cases:\n- name: a\n  about: b\n" + tc.body)}}, "cases/*.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if got := cases[0].Needs(); !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("needs %v, want %v", got, tc.want)
			}
		})
	}
}
