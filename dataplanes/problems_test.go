package dataplanes

import (
	"testing"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

type sinkLog []Problem

func (s *sinkLog) Problem(p Problem) { *s = append(*s, p) }

func TestOnceSaysEachProblemOnce(t *testing.T) {
	var heard sinkLog
	o := NewProblemReporter(Env{Problems: &heard})
	a := Problem{ServicePort: graph.ServicePortName{Namespace: "ns", Name: "a"}, Reason: "R", Message: "m"}
	b := a
	b.Message = "another"
	for i, tc := range []struct {
		p    Problem
		said bool
	}{{a, true}, {a, false}, {b, true}, {a, false}} {
		if got := o.Report(tc.p); got != tc.said {
			t.Errorf("report %d: said %v, want %v", i, got, tc.said)
		}
	}
	if len(heard) != 2 {
		t.Fatalf("the sink heard %d problems, want 2", len(heard))
	}
	NewProblemReporter(Env{}).Report(a) // no sink: nothing to hand it to, no panic
}
