package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/object"
	"github.com/switchyard-proxy/switchyard/core/runner"
	"github.com/switchyard-proxy/switchyard/core/source/file"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/dataplanes"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
)

// Status is a case's verdict for one harness.
type Status string

// The verdicts.
const (
	Pass        Status = "pass"
	Fail        Status = "FAIL"
	Unsupported Status = "unsupported"
)

// Result is one case run through one harness. A case is judged step by
// step: a step the harness cannot judge (a capability it needs that the
// driver lacks, or a probe the harness cannot send) is still applied, so
// later steps start from the cluster the case describes, but its probes
// are not sent; it is listed in Skipped with the reason. Status is
// Unsupported when no step could be judged, FAIL when a judged probe saw
// something else than expected (or the driver refused a change), and pass
// otherwise: a pass with Skipped steps is a pass in part.
type Result struct {
	Case     string        `json:"case"`
	Status   Status        `json:"status"`
	Reason   string        `json:"reason,omitempty"`   // why unsupported: every skipped step's reasons
	Steps    int           `json:"steps,omitempty"`    // the case's steps
	Skipped  []SkippedStep `json:"skipped,omitempty"`  // steps applied but not judged
	Failures []string      `json:"failures,omitempty"` // what went wrong, probe by probe
	// Held is what the driver held back while it programmed the rest
	// (runner.Partial), step by step: the probes judge what that did.
	Held []string `json:"held,omitempty"`
}

// SkippedStep is a step whose changes were made but whose probes were not
// judged, and why.
type SkippedStep struct {
	Step   int    `json:"step"` // from 1
	Reason string `json:"reason"`
}

// Partly reports whether the case was judged on some of its steps only
// (a pass or FAIL with skipped steps).
func (r Result) Partly() bool { return r.Status != Unsupported && len(r.Skipped) > 0 }

// Run runs every case through the harness as a subtest each, and writes
// the report for the matrix when SWITCHYARD_CONFORMANCE_OUT names a
// directory. Unsupported cases show as skipped with their reason, and so
// do cases that passed on some of their steps only (with the steps that
// were not judged and why): neither is counted as a full pass.
func Run(t *testing.T, h Harness, cases []Case) Report {
	t.Helper()
	rep := Report{Harness: h.Name()}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			r := Check(ctx, h, c)
			rep.Results = append(rep.Results, r)
			verdict := r.Verdict(inBrackets)
			switch {
			case r.Status == Unsupported:
				t.Skipf("unsupported: %s", r.Reason)
			case r.Status == Fail:
				for _, f := range r.Failures {
					t.Errorf("%s (%s): %s", c.Name, c.File, f)
				}
				if r.Partly() {
					t.Log(verdict)
				}
			case r.Partly():
				t.Skip(verdict)
			}
		})
	}
	if err := rep.WriteIfAsked(); err != nil {
		t.Error(err)
	}
	t.Logf("%s: %s", h.Name(), rep.Summary())
	return rep
}

// inBrackets labels a reason in the test output: "step 3 unsupported
// [reject-no-endpoints: why]", as the matrix's "[5]" with the note
// written out.
func inBrackets(reason string) string { return "[" + reason + "]" }

// Check runs one case through the harness: the driver is brought to the
// case's first state with Sync and through every later step with Apply,
// as the runner of `switchyard run` does, and after each step the probes
// are sent and judged, unless the step cannot be judged on this harness
// (notJudged). A case none of whose steps can be judged is not run.
func Check(ctx context.Context, h Harness, c Case) Result {
	r := Result{Case: c.Name, Steps: len(c.Steps)}
	why := notJudged(h, &c)
	for i, reasons := range why {
		if len(reasons) > 0 {
			r.Skipped = append(r.Skipped, SkippedStep{Step: i + 1, Reason: strings.Join(reasons, "; ")})
		}
	}
	if len(r.Skipped) == len(c.Steps) {
		var all []string
		for _, reasons := range why {
			all = appendNew(all, reasons...)
		}
		r.Status, r.Reason = Unsupported, strings.Join(all, "; ")
		return r
	}
	tr := newTracker(h.Factory())
	objs := newObjectSet()
	for i, s := range c.Steps {
		s.feed(tr)
		b := tr.Next(i == 0)
		var err error
		switch oh, ok := h.(ObjectHarness); {
		case ok:
			objs.step(s)
			err = oh.Program(ctx, objs.objects())
		case i == 0:
			err = h.Driver().Sync(ctx, b.Snapshot)
		default:
			err = h.Driver().Apply(ctx, b.Delta)
		}
		var partial runner.Partial
		if errors.As(err, &partial) {
			// Taken as the runner takes it: the rest is programmed.
			for _, h := range partial.Held() {
				r.Held = append(r.Held, fmt.Sprintf("step %d: %s", i+1, h))
			}
		} else if err != nil {
			r.Status = Fail
			r.Failures = append(r.Failures, fmt.Sprintf("step %d: the driver refused the change: %v", i+1, err))
			return r
		}
		tr.Commit(b)
		if len(why[i]) > 0 {
			continue
		}
		snap, caps := tr.Snapshot(), h.Factory().Capabilities()
		for j, spec := range s.Probes {
			if msg := probe(ctx, h, spec, func(p Probe) prediction { return predict(snap, tr, caps, p) }); msg != "" {
				r.Failures = append(r.Failures, fmt.Sprintf("step %d probe %d: %s", i+1, j+1, msg))
			}
		}
	}
	r.Status = Pass
	if len(r.Failures) > 0 {
		r.Status = Fail
	}
	return r
}

// notJudged says, step by step, why the harness cannot judge the step
// (nil when it can): each capability the step needs (Case.Needs, read
// from the case alone) that the driver declares it lacks, and each of its
// probes the harness cannot send.
func notJudged(h Harness, c *Case) [][]string {
	caps := h.Factory().Capabilities()
	out := make([][]string, len(c.Steps))
	for i, need := range c.Needs() {
		for _, x := range need {
			if !caps.Has(x) {
				out[i] = appendNew(out[i], fmt.Sprintf("%s: %s", x, caps.Reason(x)))
			}
		}
		for _, spec := range c.Steps[i].Probes {
			if msg := h.CanProbe(spec.probe(0)); msg != "" {
				out[i] = appendNew(out[i], "harness: "+msg)
			}
		}
	}
	return out
}

// appendNew appends what list does not hold yet.
func appendNew(list []string, more ...string) []string {
	for _, m := range more {
		if !slices.Contains(list, m) {
			list = append(list, m)
		}
	}
	return list
}

// newTracker makes the core as the command makes it for a driver, with
// the world's Nodes.
func newTracker(f dataplanes.Factory) *tracker.Tracker {
	tr := tracker.New(tracker.Options{
		NodeName: World.NodeName,
		Build:    build.Options{NodePortRange: build.DefaultNodePortRange, Annotations: dataplanes.AnnotationsOf(f)},
		Peers:    dataplanes.ReadsPeers(f),
	})
	for _, n := range World.NodeObjects() {
		tr.UpsertNode(n)
	}
	return tr
}

// feed hands a step's changes to the core.
func (s Step) feed(tr *tracker.Tracker) {
	for _, n := range s.objects.Nodes {
		tr.UpsertNode(n.DeepCopy())
	}
	for _, svc := range s.objects.Services {
		tr.UpsertService(object.ServiceOf(svc.DeepCopy()))
	}
	for _, sl := range s.objects.Slices {
		tr.UpsertEndpointSlice(object.EndpointSliceOf(sl.DeepCopy()))
	}
	for _, d := range s.deletes {
		switch d.kind {
		case "Service":
			tr.DeleteService(d.namespace, d.name)
		case "EndpointSlice":
			tr.DeleteEndpointSlice(d.namespace, d.name)
		}
	}
}

// probe sends a probe's connections and judges them ("" when as
// expected): against the case's expectation, and against what explain
// predicts of each connection (issue 31: any difference fails the case).
func probe(ctx context.Context, h Harness, spec ProbeSpec, explained func(Probe) prediction) string {
	answers := make([]Answer, 0, spec.Count)
	pr := explained(spec.probe(0))
	for k := range spec.Count {
		p := spec.probe(k)
		if k > 0 && p.Interval > 0 {
			select {
			case <-time.After(p.Interval):
			case <-ctx.Done():
				return "interrupted: " + ctx.Err().Error()
			}
		}
		a := h.Probe(ctx, p)
		if d, ok := h.(Diagnoser); ok && a.Outcome == Dropped && len(spec.Expect.Reaches) > 0 {
			a.Detail += "; right after: " + d.Diagnose(p)
		}
		if msg := pr.mismatch(p, []Answer{a}); msg != "" {
			return fmt.Sprintf("%s -> %s/%s connection %d: explain disagrees with the dataplane: %s", spec.From, spec.To, spec.Protocol, k+1, msg)
		}
		answers = append(answers, a)
	}
	if msg := judge(spec.Expect, spec.dst.Addr(), answers); msg != "" {
		return fmt.Sprintf("%s -> %s/%s x%d: %s", spec.From, spec.To, spec.Protocol, spec.Count, msg)
	}
	return ""
}

// probe resolves the k-th connection of a probe.
func (p ProbeSpec) probe(k int) Probe {
	pr := Probe{From: p.From, Dst: p.dst, Protocol: graph.Protocol(p.Protocol), Conn: k, Interval: p.interval, NeedsSource: p.Expect.Source != ""}
	if p.From == "node" {
		pr.FromKind = NodeSource
		pr.Src = World.NodeIP(p.dst.Addr().Is6())
		return pr
	}
	m, _ := World.Member(p.From)
	pr.FromKind = m.Kind
	pr.Src, _ = m.IP(p.dst.Addr())
	return pr
}

// objectSet is the cluster's Services and EndpointSlices as the steps so
// far left them (for an ObjectHarness).
type objectSet struct {
	services map[string]*v1.Service
	slices   map[string]*discovery.EndpointSlice
}

func newObjectSet() *objectSet {
	return &objectSet{services: map[string]*v1.Service{}, slices: map[string]*discovery.EndpointSlice{}}
}

func (o *objectSet) step(s Step) {
	for _, svc := range s.objects.Services {
		o.services[svc.Namespace+"/"+svc.Name] = svc
	}
	for _, sl := range s.objects.Slices {
		o.slices[sl.Namespace+"/"+sl.Name] = sl
	}
	for _, d := range s.deletes {
		switch d.kind {
		case "Service":
			delete(o.services, d.namespace+"/"+d.name)
		case "EndpointSlice":
			delete(o.slices, d.namespace+"/"+d.name)
		}
	}
}

// objects lists them in a stable order, deep-copied.
func (o *objectSet) objects() file.Objects {
	var out file.Objects
	for _, k := range slices.Sorted(maps.Keys(o.services)) {
		out.Services = append(out.Services, o.services[k].DeepCopy())
	}
	for _, k := range slices.Sorted(maps.Keys(o.slices)) {
		out.Slices = append(out.Slices, o.slices[k].DeepCopy())
	}
	return out
}
