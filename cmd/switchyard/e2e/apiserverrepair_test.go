//go:build linux

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// kube-apiserver repairs its Service allocators on its own: every 3
// minutes (hard-coded) its ClusterIP repair (the bitmap allocator's) and
// its NodePort repair each list every Service through the API server's
// loopback client. At 30k and 100k Services those lists and the
// collection of their garbage keep the API server busy for a second or
// more (docs/scale.md: profiled), on this machine the same two cores as
// the node's; the benchmark records when they ran, from an audit log of
// just those lists, so that a run says which of its figures they fell in.

// repairAuditPolicy audits the loopback user's lists of Services, and
// nothing else.
const repairAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["system:apiserver"]
  verbs: ["list"]
  resources: [{group: "", resources: ["services"]}]
- level: None
`

// repairAftermath is how long after a repair's list ends it is still
// counted as running: the collection of the list's garbage follows it
// (~0.8 CPU-seconds at 30k in the profile docs/scale.md cites).
const repairAftermath = time.Second

// repairAudit is the audit log of the API server's repair lists.
type repairAudit struct{ log string }

// newRepairAudit writes the audit policy into dir and returns the log's
// place with the API server's flags that write it.
func newRepairAudit(t testing.TB, dir string) (*repairAudit, []string) {
	policy := filepath.Join(dir, "repair-audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(repairAuditPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &repairAudit{log: filepath.Join(dir, "repair-audit.log")}
	return a, []string{"--audit-policy-file=" + policy, "--audit-log-path=" + a.log, "--audit-log-format=json"}
}

// span is one repair list (or one of switchyard's audits), from its
// start to its end.
type span struct{ from, to time.Time }

// lists reads the repair lists logged so far (none before the log exists).
func (a *repairAudit) lists() ([]span, error) {
	if _, err := os.Stat(a.log); os.IsNotExist(err) {
		return nil, nil
	}
	var out []span
	err := eachLine(a.log, func(line []byte) error {
		var ev struct {
			Stage    string    `json:"stage"`
			Received time.Time `json:"requestReceivedTimestamp"`
			Stamp    time.Time `json:"stageTimestamp"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			return fmt.Errorf("audit log %s: %v", a.log, err)
		}
		if ev.Stage == "ResponseComplete" {
			out = append(out, span{ev.Received, ev.Stamp})
		}
		return nil
	})
	return out, err
}

// eachLine hands each line of a log file to line (lines up to 1 MiB),
// stopping at its first error.
func eachLine(path string, line func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		if err := line(sc.Bytes()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// within counts the repair lists that ran, their aftermath included,
// at some time in [from, to].
func within(lists []span, from, to time.Time) int {
	return overlapping(lists, repairAftermath, from, to)
}

// overlapping counts the spans that, with after added to their end,
// meet [from, to].
func overlapping(spans []span, after time.Duration, from, to time.Time) int {
	n := 0
	for _, l := range spans {
		if !l.from.After(to) && !l.to.Add(after).Before(from) {
			n++
		}
	}
	return n
}

// repairLists is when kube-apiserver's repairs listed the Services so far.
func (s *scaleRun) repairLists(b *testing.B) []span {
	lists, err := s.repairs.lists()
	if err != nil {
		b.Fatal(err)
	}
	return lists
}

// reportRepairs reports how many of kube-apiserver's repair lists ran
// during switchyard's first sync, how many of the changes written at at
// were followed while one ran, and the percentiles of the others: what
// the API server's own periodic work did to the figures (not a target's
// figure: the target counts every change). Read once the lists under
// way during the first sync have ended (each is logged when it ends).
func (s *scaleRun) reportRepairs(b *testing.B, at []time.Time, took []time.Duration) {
	lists := s.repairLists(b)
	b.ReportMetric(float64(within(lists, s.firstSync.from, s.firstSync.to)), "first-sync-apiserver-repairs")
	var outside []time.Duration
	for i, d := range took {
		if within(lists, at[i], at[i].Add(d)) == 0 {
			outside = append(outside, d)
		}
	}
	b.ReportMetric(float64(len(took)-len(outside)), "write-to-traffic-in-repair")
	if len(outside) > 0 {
		reportPercentiles(b, outside, "write-to-traffic-outside-repair")
	}
}
