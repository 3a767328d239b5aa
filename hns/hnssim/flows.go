package hnssim

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/switchyard-proxy/switchyard/hns"
)

// Flows is connection state kept beside a simulator: the backend each
// open connection went to, so a later packet of it can be judged after
// the load balancers changed (rules V1-V3 in rules.go).
type Flows struct {
	mu   sync.Mutex
	open map[flowKey]netip.AddrPort
}

type flowKey struct {
	from     SourceKind
	src      netip.Addr
	dst      netip.AddrPort
	protocol uint32
	conn     uint64
}

func keyOf(p Packet) flowKey { return flowKey{p.From, p.Src, p.Dst, p.Protocol, p.Conn} }

// NewFlows returns an empty connection table.
func NewFlows() *Flows { return &Flows{open: map[flowKey]netip.AddrPort{}} }

// Open evaluates the first packet of a connection and, when a load
// balancer connected it, remembers where it went.
func (f *Flows) Open(s *Sim, p Packet) Verdict {
	v := s.Evaluate(p)
	if v.Balanced && v.Connected {
		f.mu.Lock()
		f.open[keyOf(p)] = v.Backend
		f.mu.Unlock()
	}
	return v
}

// Next evaluates a later packet of a connection Open connected, as HNS
// holds the load balancers now. A connection that breaks is forgotten.
func (f *Flows) Next(s *Sim, p Packet) Verdict {
	f.mu.Lock()
	defer f.mu.Unlock()
	was, ok := f.open[keyOf(p)]
	if !ok {
		return Verdict{Reason: "no such open connection"}
	}
	v := s.later(p, was)
	if !v.Connected {
		delete(f.open, keyOf(p))
	}
	return v
}

// later is V1-V3: the backend a later packet of a connection to was goes
// to.
func (s *Sim) later(p Packet, was netip.AddrPort) Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, lb, pm, ok := s.balancer(p)
	if !ok {
		return Verdict{Reason: "no load balancer takes the connection any more"}
	}
	stay := s.indexOf(lb, pm, was)
	if stay < 0 {
		return Verdict{Balanced: true, Reason: fmt.Sprintf("load balancer %s: the connection's backend %s is gone", id, was)}
	}
	if p.From != FromExternal || pm.Flags&hns.PortFlagVipExternalIP != 0 {
		return s.deliver(p, id, lb, pm, stay)
	}
	v := s.deliver(p, id, lb, pm, pick(p, pm, len(lb.HostComputeEndpoints)))
	if v.Backend != was {
		return Verdict{Balanced: true, Backend: v.Backend,
			Reason: fmt.Sprintf("load balancer %s without VipExternalIP balanced an established connection again: it moved from %s to %s and broke (kubernetes#113842)", id, was, v.Backend)}
	}
	return v
}

// indexOf is the position of the backend at ap among lb's endpoints (-1:
// none).
func (s *Sim) indexOf(lb *hns.LoadBalancer, pm hns.PortMapping, ap netip.AddrPort) int {
	if pm.InternalPort != ap.Port() {
		return -1
	}
	for i, id := range lb.HostComputeEndpoints {
		if ep := s.endpoints[id]; ep != nil && ep.IP() == ap.Addr().String() {
			return i
		}
	}
	return -1
}
