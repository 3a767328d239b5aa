package dataplanes

import "github.com/switchyard-proxy/switchyard/core/graph"

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
