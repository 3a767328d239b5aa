//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// explainCheck asks the node's proxy, as an operator would with the
// kubectl plugin, where a pod's connection to the ClusterIP goes: the
// plugin runs `switchyard explain` in the node's switchyard pod, which
// answers from the graph it programs, and asks its OVS bridge
// (ofproto/trace). The endpoints it names as used are the Service's ready
// pods, and the bridge's trace reaches only those. The bridge has counted
// connections to the Service (the checks before made some), to those
// pods only. The table is kept in bin/ as a transcript.
func (n *realNode) explainCheck(t *testing.T, from netip.Addr, to netip.AddrPort, ready []string) {
	t.Helper()
	bin := buildPlugin(t)
	want := map[string]bool{}
	for _, name := range ready {
		p, err := n.API.Admin.CoreV1().Pods(appNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want[netip.AddrPortFrom(netip.MustParseAddr(p.Status.PodIP), appPort).String()] = true
	}
	counted, err := n.explained(bin, n.Name, from.String(), to.String(), want)
	if err != nil {
		t.Fatal(err)
	}
	if counted == 0 {
		t.Error("the bridge counted no connection to the Service (--service-counters)")
	}
	if err := os.WriteFile(filepath.Join(repoRoot, "bin", "e2e-node-explain.txt"), []byte(n.transcript(t, bin, n.Name, from.String(), to.String())), 0o644); err != nil {
		t.Logf("transcript not kept: %v", err)
	}
}

// explainDNS asks every node's proxy, with the plugin, where the node's
// own connection to the cluster DNS (TCP) goes: to the ready CoreDNS pods,
// on this node or another (routed, or through the tunnel), and the
// bridge's trace agrees. The tables are kept in dir/explain.txt.
func (c *realCluster) explainDNS(t *testing.T, dir string) {
	t.Helper()
	n := c.Nodes[0]
	bin := buildPlugin(t)
	to := netip.AddrPortFrom(netip.MustParseAddr(clusterDNSIP), 53).String() + "/TCP"
	var transcripts []string
	for _, node := range c.Nodes {
		err := waitFor(time.Minute, func() error {
			want, err := n.readyEndpoints("kube-system", "k8s-app=kube-dns", 53)
			if err != nil {
				return err
			}
			_, err = n.explained(bin, node.Name, "node", to, want)
			return err
		})
		if err != nil {
			t.Fatalf("node %s: %v", node.Name, err)
		}
		transcripts = append(transcripts, n.transcript(t, bin, node.Name, "node", to))
	}
	if err := os.WriteFile(filepath.Join(dir, "explain.txt"), []byte(strings.Join(transcripts, "\n")), 0o644); err != nil {
		t.Logf("transcripts not kept: %v", err)
	}
}

// buildPlugin builds kubectl-switchyard, to run as kubectl runs a plugin,
// on a machine that reaches the API server: here a node (as helm is run).
func buildPlugin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kubectl-switchyard")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/switchyard-proxy/switchyard/cmd/kubectl-switchyard").CombinedOutput(); err != nil {
		t.Fatalf("go build kubectl-switchyard: %v\n%s", err, out)
	}
	return bin
}

// askPlugin runs `kubectl switchyard explain --dataplane ovs` on n about
// node's proxy.
func (n *realNode) askPlugin(bin, node, from, to, output string) (string, error) {
	args := []string{"explain", "--kubeconfig", n.kubeconfig(), "--node", node, "--from", from, "--to", to, "--dataplane", "ovs", "-o", output}
	cmd := exec.Command("nsenter", append([]string{"--net=" + netnsPath(n.Host.NS), "--", bin}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kubectl switchyard %s: %v: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// explained checks the plugin's JSON answer: one route, forwarded, to
// exactly the endpoints in want, without disagreement; the bridge's trace
// has a path and reaches only those; the bridge's counts for the service
// port (--service-counters) sum its endpoints' and name only those. It
// returns the connections counted.
func (n *realNode) explained(bin, node, from, to string, want map[string]bool) (uint64, error) {
	out, err := n.askPlugin(bin, node, from, to, "json")
	if err != nil {
		return 0, err
	}
	var x struct {
		Routes []struct {
			ServicePort, Action, Disagreement string
			Endpoints                         []struct {
				Endpoint string
				Used     bool
			}
		}
		Dataplane *struct {
			Reached             map[string]int
			Path                []struct{ Table, Did string }
			Error, Disagreement string
			Counts              map[string]struct {
				Connections uint64
				Endpoints   map[string]uint64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &x); err != nil {
		return 0, err
	}
	if len(x.Routes) != 1 || x.Routes[0].Action != "forward" || x.Routes[0].Disagreement != "" {
		return 0, fmt.Errorf("explain: %+v; want one route, forwarded, without disagreement", x)
	}
	var used []string
	for _, e := range x.Routes[0].Endpoints {
		if e.Used {
			used = append(used, e.Endpoint)
		}
	}
	if len(used) != len(want) || slices.ContainsFunc(used, func(e string) bool { return !want[e] }) {
		return 0, fmt.Errorf("explain names %v as used; the ready pods are %v", used, slices.Sorted(maps.Keys(want)))
	}
	dp := x.Dataplane
	if dp == nil || dp.Error != "" || dp.Disagreement != "" || len(dp.Path) == 0 {
		return 0, fmt.Errorf("the bridge's trace: %+v; want a path, without error or disagreement", dp)
	}
	for reached := range dp.Reached {
		if !want[reached] {
			return 0, fmt.Errorf("the bridge's trace reached %v; the ready pods are %v", dp.Reached, want)
		}
	}
	c, ok := dp.Counts[x.Routes[0].ServicePort]
	if !ok {
		return 0, fmt.Errorf("no counts for %s (--service-counters): %v", x.Routes[0].ServicePort, dp.Counts)
	}
	var sum uint64
	for ep, k := range c.Endpoints {
		if k > 0 && !want[ep] {
			return 0, fmt.Errorf("%d connections counted to %s; the ready pods are %v", k, ep, slices.Sorted(maps.Keys(want)))
		}
		sum += k
	}
	if sum != c.Connections {
		return 0, fmt.Errorf("%d connections counted, %d by endpoint (%v)", c.Connections, sum, c.Endpoints)
	}
	return c.Connections, nil
}

// transcript is the plugin's table, with the command that printed it.
func (n *realNode) transcript(t *testing.T, bin, node, from, to string) string {
	t.Helper()
	out, err := n.askPlugin(bin, node, from, to, "table")
	if err != nil {
		t.Fatal(err)
	}
	return "$ kubectl switchyard explain --node " + node + " --from " + from + " --to " + to + " --dataplane ovs\n" + out
}

// readyEndpoints are the ready pods' addresses with port, of the pods
// labelled selector in namespace.
func (n *realNode) readyEndpoints(namespace, selector string, port uint16) (map[string]bool, error) {
	pods, err := n.API.Admin.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(&p) && p.Status.PodIP != "" {
			want[netip.AddrPortFrom(netip.MustParseAddr(p.Status.PodIP), port).String()] = true
		}
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("no ready pod is labelled %s in %s", selector, namespace)
	}
	return want, nil
}
