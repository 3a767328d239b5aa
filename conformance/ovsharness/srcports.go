package ovsharness

import "sync"

// The source ports probes take, in turn: below Linux's ephemeral range
// (32768-60999) and the NodePort range (30000-32767), so that neither the
// kernel's own choices nor a NodePort meets them.
const (
	firstProbePort = 20000
	lastProbePort  = 29999
)

// sourcePorts gives each probe a source port of its own, not the kernel's
// choice. The kernel may take, for a connection straight to an endpoint,
// the port an earlier connection through a ClusterIP to that endpoint
// used; on OVS's userspace datapath before 3.3 the driver cannot resolve
// that clash (docs/ovs.md, "Source-port clashes": it has a test of its
// own, ovs/portclash_test.go) and the probe timed out, about one overlay
// run in seven. A run's verdicts should not depend on that chance: here
// no port is used twice until the 10 000 have all been used.
type sourcePorts struct {
	mu   sync.Mutex
	next uint16
}

// take returns the next port.
func (s *sourcePorts) take() uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next < firstProbePort || s.next > lastProbePort {
		s.next = firstProbePort
	}
	p := s.next
	s.next++
	return p
}
