//go:build linux

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// explainCheck asks the node's proxy, as an operator would with the
// kubectl plugin, where a pod's connection to the ClusterIP goes: the
// plugin runs `switchyard explain` in the node's switchyard pod, which
// answers from the graph it programs. The endpoints it names as used are
// the Service's ready pods. The table is kept in bin/ as a transcript.
func (n *realNode) explainCheck(t *testing.T, from netip.Addr, to netip.AddrPort, ready []string) {
	t.Helper()
	// Built and run as kubectl runs a plugin, on a machine that reaches the
	// API server: here the node (as helm is run).
	bin := filepath.Join(t.TempDir(), "kubectl-switchyard")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/switchyard-proxy/switchyard/cmd/kubectl-switchyard").CombinedOutput(); err != nil {
		t.Fatalf("go build kubectl-switchyard: %v\n%s", err, out)
	}
	ask := func(output string) string {
		t.Helper()
		args := []string{"explain", "--kubeconfig", n.kubeconfig(), "--node", n.Name, "--from", from.String(), "--to", to.String(), "-o", output}
		cmd := exec.Command("nsenter", append([]string{"--net=" + netnsPath(n.Host.NS), "--", bin}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("kubectl switchyard %s: %v: %s", strings.Join(args, " "), err, errOut.String())
		}
		return out.String()
	}
	var x struct {
		Routes []struct {
			ServicePort, Action, Disagreement string
			Endpoints                         []struct {
				Endpoint string
				Used     bool
			}
		}
	}
	if err := json.Unmarshal([]byte(ask("json")), &x); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, name := range ready {
		p, err := n.API.Admin.CoreV1().Pods(appNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want[netip.AddrPortFrom(netip.MustParseAddr(p.Status.PodIP), appPort).String()] = true
	}
	if len(x.Routes) != 1 || x.Routes[0].Action != "forward" || x.Routes[0].Disagreement != "" {
		t.Fatalf("explain: %+v; want one route, forwarded, without disagreement", x)
	}
	var used []string
	for _, e := range x.Routes[0].Endpoints {
		if e.Used {
			used = append(used, e.Endpoint)
		}
	}
	if len(used) != len(want) || slices.ContainsFunc(used, func(e string) bool { return !want[e] }) {
		t.Fatalf("explain names %v as used; the ready pods are %v", used, want)
	}
	transcript := "$ kubectl switchyard explain --node " + n.Name + " --from " + from.String() + " --to " + to.String() + "\n" + ask("table")
	if err := os.WriteFile(filepath.Join(repoRoot, "bin", "e2e-node-explain.txt"), []byte(transcript), 0o644); err != nil {
		t.Logf("transcript not kept: %v", err)
	}
}
