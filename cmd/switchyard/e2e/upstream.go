//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Upstream's network conformance (issue 29): e2e.test of the release
// hack/ensure-e2e.sh builds, run on the node against its API server.
// upstreamFocus and upstreamSkip select every [Conformance] spec of
// sig-network and every [sig-network] Services and Networking spec that is
// not Slow, Serial, Disruptive, Flaky or behind a feature gate.
var (
	upstreamFocus = regexp.MustCompile(`\[sig-network\].*\[Conformance\]|\[sig-network\] Services |\[sig-network\] Networking `)
	upstreamSkip  = regexp.MustCompile(`\[Slow\]|\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Feature:`)
)

// upstreamProcs is how many processes run the specs at once: most of a
// spec's time is waiting for pods and polls.
const upstreamProcs = 4

// upstreamTimeout bounds the run (ginkgo's --timeout); make e2e-upstream
// gives go test 60 minutes.
const upstreamTimeout = 40 * time.Minute

// specResult is one spec of the run, as ginkgo's JSON report says.
type specResult struct {
	Name    string
	State   string // passed, failed, skipped, ...
	Message string // a failure's or skip's
	Seconds float64
}

// runUpstream runs e2e.test in the node's namespace (as on a
// control-plane node) with the focus and skip, its reports under
// reportDir, and returns the selected specs' results.
func runUpstream(t testing.TB, n *realNode, nodes int, bins, reportDir string) []specResult {
	t.Helper()
	if err := os.MkdirAll(reportDir, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(n.dir, "e2e-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	// The ginkgo CLI runs the specs in upstreamProcs processes, as
	// upstream's hack/ginkgo-e2e.sh does (Serial specs are not selected).
	args := []string{"--net=" + netnsPath(n.Host.NS), "--", filepath.Join(bins, "ginkgo"),
		fmt.Sprintf("--procs=%d", upstreamProcs), "--no-color", "--timeout=" + upstreamTimeout.String(),
		"--output-dir=" + reportDir, "--json-report=report.json",
		"--focus=" + upstreamFocus.String(), "--skip=" + upstreamSkip.String(),
		filepath.Join(bins, "e2e.test"), "--",
		"--provider=skeleton", "--kubeconfig=" + n.kubeconfig(), "--kubectl-path=" + filepath.Join(bins, "kubectl"),
		"--report-dir=" + reportDir, "--dump-logs-on-failure=false",
		fmt.Sprintf("--num-nodes=%d", nodes)} // the skeleton provider's node count: specs skip below what they need
	// A backstop past ginkgo's own timeout, before go test's: the run and
	// every process it started are killed, and the test's cleanups run.
	ctx, cancel := context.WithTimeout(context.Background(), upstreamTimeout+5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG="+n.kubeconfig())
	log, err := os.Create(filepath.Join(reportDir, "e2e.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	start := time.Now()
	runErr := cmd.Run() // non-zero when a spec failed: the report says which
	t.Logf("e2e.test ran %s (%v); its log: %s", time.Since(start).Round(time.Second), runErr, log.Name())
	specs, err := readGinkgoReport(filepath.Join(reportDir, "report.json"))
	if err != nil {
		t.Fatalf("e2e.test left no report (%v): %v; last lines of its log:\n%s", runErr, err, tail(log.Name(), 40))
	}
	return specs
}

// readGinkgoReport reads the It specs ginkgo's JSON report holds that the
// focus and skip select (a filtered-out spec is in it too, as skipped).
func readGinkgoReport(path string) ([]specResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var suites []struct {
		SpecReports []struct {
			ContainerHierarchyTexts []string
			LeafNodeType            string
			LeafNodeText            string
			State                   string
			RunTime                 int64 // ns
			Failure                 struct{ Message string }
		}
	}
	if err := json.Unmarshal(b, &suites); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []specResult
	for _, s := range suites {
		for _, r := range s.SpecReports {
			if r.LeafNodeType != "It" {
				continue
			}
			name := strings.Join(append(r.ContainerHierarchyTexts, r.LeafNodeText), " ")
			if !upstreamFocus.MatchString(name) || upstreamSkip.MatchString(name) {
				continue
			}
			out = append(out, specResult{Name: name, State: r.State, Message: r.Failure.Message,
				Seconds: time.Duration(r.RunTime).Seconds()})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no selected spec", path)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// upstreamTable is the run as a markdown table, with the count of each
// state.
func upstreamTable(specs []specResult) string {
	count := map[string]int{}
	var b strings.Builder
	b.WriteString("| spec | result | seconds | reason |\n|---|---|---|---|\n")
	for _, s := range specs {
		count[s.State]++
		reason := ""
		if s.State != "passed" {
			reason = firstLine(s.Message)
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %s |\n", strings.ReplaceAll(s.Name, "|", `\|`), s.State, s.Seconds, strings.ReplaceAll(reason, "|", `\|`))
	}
	states := make([]string, 0, len(count))
	for st, c := range count {
		states = append(states, fmt.Sprintf("%d %s", c, st))
	}
	sort.Strings(states)
	return fmt.Sprintf("%d specs selected: %s\n\n%s", len(specs), strings.Join(states, ", "), b.String())
}

// firstLine is s's first line, at most 200 bytes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
