//go:build linux

package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/conformance/ovsharness"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
	authv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// followBound is how long traffic may take to follow a change before the
// test fails (a generous bound for a loaded 2-core machine; the measured
// times are printed).
const followBound = 10 * time.Second

// proxy is switchyard running as its own process on node-1 of the world,
// against the API server, which it reaches through a relay in node-1's
// namespace (a test can cut it).
type proxy struct {
	proc *ovstest.Process
	fwd  *forwarder
}

// onNode1 starts switchyard on node-1 with a kubeconfig of token and args
// (BuildWorld calls it once node-1 exists).
func (p *proxy) onNode1(t testing.TB, c *cluster, token string, args ...string) func(n *ovstest.Node) *ovstest.Process {
	return func(n *ovstest.Node) *ovstest.Process {
		p.fwd = newForwarder(t, n.NS, strings.TrimPrefix(c.URL, "https://"))
		via := &cluster{URL: "https://" + p.fwd.addr, CAFile: c.CAFile}
		p.proc = n.StartSwitchyard(t, append([]string{"--kubeconfig=" + via.kubeconfig(t, token)}, args...)...)
		return p.proc
	}
}

// TestSwitchyardAgainstARealAPIServer runs the switchyard binary with the
// chart's RBAC (a token of the chart's ServiceAccount, nothing more) and
// the chart's config, against a real API server, on node-1 of the
// conformance world (a real OVS, pods attached by switchyard-cni), and
// follows each change with real connections.
func TestSwitchyardAgainstARealAPIServer(t *testing.T) {
	helm := helmBinary(t)
	c := startCluster(t)
	a := newApplier(t, c)
	ctx := context.Background()
	p := &proxy{}

	// The chart's ServiceAccount, ClusterRole and binding, for real, and
	// its config file for the ovs dataplane.
	manifest, err := render(helm)
	if err != nil {
		t.Fatal(err)
	}
	objs := objects(t, manifest)
	for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding"} {
		for _, o := range find(objs, kind) {
			if err := a.create(ctx, o, false); err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
		}
	}
	cfg, _, _ := unstructured.NestedString(find(objs, "ConfigMap")[0].Object, "data", "linux.yaml")
	cfgFile := filepath.Join(t.TempDir(), "linux.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	sa := find(objs, "ServiceAccount")[0].GetName()
	tok, err := c.Admin.CoreV1().ServiceAccounts(chartNamespace).CreateToken(ctx, sa,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkLeastPrivilege(t, c, tok.Status.Token)

	c.addNodes(t)
	ns := "e2e"
	c.namespace(t, ns)
	// The chart's config; the world's node-1 flags (bridge, OVS, node
	// file) and its own health and metrics addresses win over it.
	w := ovsharness.BuildWorld(t, ovsharness.WorldOptions{StartNode1: p.onNode1(t, c, tok.Status.Token, "--config="+cfgFile)})

	// Probes while waiting for a change give up after 200 ms, so an
	// unanswered one costs little of the measured time.
	w.Timeout = 200 * time.Millisecond
	var table []row
	measure := func(what string, change func() error, follows func() bool) {
		t.Helper()
		// A single change: the last sync is older than --min-sync-period
		// (1 s, the default, as upstream's), so nothing holds it back.
		time.Sleep(1200 * time.Millisecond)
		start := time.Now()
		if err := change(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for !follows() {
			if time.Since(start) > followBound {
				t.Fatalf("%s: traffic did not follow within %v", what, followBound)
			}
			time.Sleep(20 * time.Millisecond)
		}
		table = append(table, row{what, time.Since(start)})
	}
	cs := c.Admin
	svcs, eslices := cs.CoreV1().Services(ns), cs.DiscoveryV1().EndpointSlices(ns)
	var clusterIP netip.Addr
	web := func(port uint16) netip.AddrPort { return netip.AddrPortFrom(clusterIP, port) }

	measure("Service + slice created: a pod reaches p1", func() error {
		s, err := svcs.Create(ctx, service(ns, "web", v1.ServiceTypeClusterIP, 80, 8080, 0), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		clusterIP = netip.MustParseAddr(s.Spec.ClusterIP)
		_, err = eslices.Create(ctx, slice(ns, "web-1", "web", 8080, endpoint{"10.244.1.5", "node-1", false}), metav1.CreateOptions{})
		return err
	}, func() bool { return reaches(w, "c", web(80), "p1:8080") })

	measure("endpoints scaled up: p2 and r1 (node-2) reached", func() error {
		_, err := eslices.Update(ctx, slice(ns, "web-1", "web", 8080, endpoint{"10.244.1.5", "node-1", false},
			endpoint{"10.244.1.6", "node-1", false}, endpoint{"10.244.2.10", "node-2", false}), metav1.UpdateOptions{})
		return err
	}, func() bool { return seesAll(w, "c", web(80), 30, "p1:8080", "p2:8080", "r1:8080") })

	measure("p1 terminating: no new connection reaches it", func() error {
		_, err := eslices.Update(ctx, slice(ns, "web-1", "web", 8080, endpoint{"10.244.1.5", "node-1", true},
			endpoint{"10.244.1.6", "node-1", false}, endpoint{"10.244.2.10", "node-2", false}), metav1.UpdateOptions{})
		return err
	}, func() bool { return never(w, "c", web(80), 20, "p1:8080") })

	measure("port changed 80 -> 81 (target 8081)", func() error {
		s, err := svcs.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Ports[0].Port, s.Spec.Ports[0].TargetPort.IntVal = 81, 8081
		if _, err := svcs.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			return err
		}
		_, err = eslices.Update(ctx, slice(ns, "web-1", "web", 8081, endpoint{"10.244.1.6", "node-1", false}), metav1.UpdateOptions{})
		return err
	}, func() bool { return reaches(w, "c", web(81), "p2:8081") })

	var lbIP netip.Addr
	measure("LoadBalancer with an ingress IP: reached from outside", func() error {
		s, err := svcs.Create(ctx, service(ns, "lb", v1.ServiceTypeLoadBalancer, 80, 8080, 0), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if _, err := eslices.Create(ctx, slice(ns, "lb-1", "lb", 8080, endpoint{"10.244.1.8", "node-1", false}), metav1.CreateOptions{}); err != nil {
			return err
		}
		lbIP = netip.MustParseAddr("203.0.113.77")
		s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: lbIP.String()}}
		_, err = svcs.UpdateStatus(ctx, s, metav1.UpdateOptions{})
		return err
	}, func() bool { return reaches(w, "external", netip.AddrPortFrom(lbIP, 80), "p3:8080") })
	lb, err := svcs.Get(ctx, "lb", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodePort := netip.AddrPortFrom(netip.MustParseAddr("192.168.100.10"), uint16(lb.Spec.Ports[0].NodePort))
	if !reaches(w, "external", nodePort, "p3:8080") {
		t.Errorf("the LoadBalancer's allocated NodePort %v does not reach p3", nodePort)
	}

	measure("Service deleted: its ClusterIP no longer answers", func() error {
		return svcs.Delete(ctx, "web", metav1.DeleteOptions{})
	}, func() bool { return unreached(w, "c", web(81)) })

	// Problems reach the objects as Events, through the chart's RBAC: an
	// affinity timeout OVS cannot hold (the Service), and an FQDN slice the
	// core does not proxy (the EndpointSlice).
	sticky := service(ns, "sticky", v1.ServiceTypeClusterIP, 80, 8080, 0)
	sticky.Spec.SessionAffinity = v1.ServiceAffinityClientIP
	sticky.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](86400)}}
	if _, err := svcs.Create(ctx, sticky, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := eslices.Create(ctx, slice(ns, "sticky-1", "sticky", 8080, endpoint{"10.244.1.5", "node-1", false}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fqdn := slice(ns, "sticky-fqdn", "sticky", 8080)
	fqdn.AddressType = "FQDN"
	fqdn.Endpoints = []discovery.Endpoint{{Addresses: []string{"backend.example.com"}}}
	if _, err := eslices.Create(ctx, fqdn, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct{ kind, name, reason string }{
		{"Service", "sticky", "AffinityTimeoutClamped"},
		{"EndpointSlice", "sticky-fqdn", "UnsupportedAddressType"},
	} {
		if err := waitFor(followBound, func() error {
			evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + want.name})
			if err != nil {
				return err
			}
			for _, e := range evs.Items {
				if e.InvolvedObject.Kind == want.kind && e.Reason == want.reason && e.Type == v1.EventTypeWarning {
					t.Logf("Event on %s %s: %s: %s", want.kind, want.name, e.Reason, e.Message)
					return nil
				}
			}
			return fmt.Errorf("no %s Event on %s %s (%d events)", want.reason, want.kind, want.name, len(evs.Items))
		}); err != nil {
			t.Error(err)
		}
	}

	// /metrics of the running proxy carries the programming latency.
	body, err := p.metrics()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^kubeproxy_network_programming_duration_seconds_count\S* (\d+)`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no kubeproxy_network_programming_duration_seconds")
	}
	if n, _ := strconv.Atoi(m[1]); n == 0 {
		t.Errorf("kubeproxy_network_programming_duration_seconds has no observations")
	}
	report(t, table, body)
}

type row struct {
	what string
	took time.Duration
}

// report prints the measured times (and writes them to
// $SWITCHYARD_E2E_REPORT when set, for make e2e to show).
func report(t *testing.T, rows []row, metrics string) {
	var b strings.Builder
	b.WriteString("single change written -> traffic follows (real API server, real OVS; connections every 20 ms,\n")
	b.WriteString("each given up after 200 ms; --min-sync-period 1s, changes 1.2 s apart; a change of two writes\n")
	b.WriteString("waits one --min-sync-period for its second write, as upstream's rate limit does; the test fails\n")
	fmt.Fprintf(&b, "past %v)\n", followBound)
	for _, r := range rows {
		fmt.Fprintf(&b, "  %-58s %8.0f ms\n", r.what, float64(r.took.Microseconds())/1000)
	}
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "kubeproxy_network_programming_duration_seconds_sum") || strings.HasPrefix(line, "kubeproxy_network_programming_duration_seconds_count") {
			b.WriteString("  /metrics: " + line + "\n")
		}
	}
	t.Log("\n" + b.String())
	if f := os.Getenv("SWITCHYARD_E2E_REPORT"); f != "" {
		os.WriteFile(f, []byte(b.String()), 0o644)
	}
}

// checkLeastPrivilege: the chart's token may watch what the proxy needs
// and nothing more.
func checkLeastPrivilege(t *testing.T, c *cluster, token string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.restConfig(token))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		group, resource, verb string
		allowed               bool
	}{
		{"", "services", "watch", true},
		{"discovery.k8s.io", "endpointslices", "list", true},
		{"", "nodes", "get", true},
		{"", "events", "create", true},
		{"", "secrets", "list", false},
		{"", "services", "update", false},
		{"", "pods", "list", false},
		{"", "nodes", "patch", false},
	} {
		r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authzv1.SelfSubjectAccessReview{
			Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
				Group: tc.group, Resource: tc.resource, Verb: tc.verb, Namespace: "e2e"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed != tc.allowed {
			t.Errorf("the chart's token: %s %s/%s allowed=%v, want %v", tc.verb, tc.group, tc.resource, r.Status.Allowed, tc.allowed)
		}
	}
}

func (p *proxy) healthy() error {
	h, err := p.proc.Health()
	if err != nil {
		return err
	}
	if h.Code != 200 {
		return fmt.Errorf("/healthz %d", h.Code)
	}
	return nil
}

func (p *proxy) metrics() (string, error) { return p.proc.Metrics() }
