package dataplanes

import (
	"github.com/switchyard-proxy/switchyard/core/graph"
	"k8s.io/klog/v2"
)

// Problem is something a driver cannot program as a service port asks:
// a value it has to cut (an affinity timeout beyond what the dataplane
// holds), endpoints it has to leave out, or a dataplane call that keeps
// failing for that service port.
type Problem struct {
	ServicePort graph.ServicePortName
	Reason      string // CamelCase, as an Event reason ("AffinityTimeoutClamped")
	Message     string
}

// ProblemSink hears a driver's problems. The command counts them
// (switchyard_service_port_problems_total) and, with an API server,
// records a Warning Event on the Service. Drivers report each problem
// once, not on every sync.
type ProblemSink interface {
	Problem(Problem)
}

// Report hands p to the sink, if there is one.
func (e Env) Report(p Problem) {
	if e.Problems != nil {
		e.Problems.Problem(p)
	}
}

// ProblemReporter says each problem once: the first time it hears one (the same
// service port, reason and message) it logs it and hands it to the sink;
// a driver calls Report at every sync without repeating itself. The zero
// value is not usable: make one with NewProblemReporter.
type ProblemReporter struct {
	env  Env
	said map[Problem]bool
}

// NewProblemReporter returns a ProblemReporter reporting to env's sink.
func NewProblemReporter(env Env) *ProblemReporter {
	return &ProblemReporter{env: env, said: map[Problem]bool{}}
}

// Report says p if it was not said before, and tells whether it did.
func (o *ProblemReporter) Report(p Problem) bool {
	if o.said[p] {
		return false
	}
	o.said[p] = true
	klog.InfoS("The dataplane cannot program this as asked", "servicePort", p.ServicePort.String(), "reason", p.Reason, "problem", Bounded(p.Message, MaxMessage))
	o.env.Report(p)
	return true
}
