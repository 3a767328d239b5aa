// Package health serves the proxy's own health (/healthz, /livez, /readyz) and the
// health-check node ports of externalTrafficPolicy=Local LoadBalancer
// Services, as upstream kube-proxy does.
package health

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/switchyard-proxy/switchyard/core/runner"
)

// Proxy answers from the sync runner's status, from the process's start
// on (a slow initial list must not look like a dead process):
//
//   - /healthz, upstream kube-proxy's: healthy when nothing is queued, or
//     the oldest queued change has waited less than Timeout (upstream uses
//     twice the sync period). Healthy while starting, as upstream's.
//   - /readyz, the pod's readiness: not ready until the first sync has
//     succeeded, then as /healthz (a rolling update moves on to the next
//     node only once this one has programmed its dataplane).
//   - /livez, the pod's liveness: the process answers and its sync loop
//     turns. Only a sync attempt under way for longer than StallTimeout
//     (the loop stuck in the driver) fails it: a restart helps that, not a
//     dataplane refusing changes or an API server slow to list.
type Proxy struct {
	Status       func() runner.Status
	Timeout      time.Duration
	StallTimeout time.Duration
	Now          func() time.Time // nil: time.Now
}

type proxyReport struct {
	LastUpdated  time.Time `json:"lastUpdated"`
	CurrentTime  time.Time `json:"currentTime"`
	QueuedSince  time.Time `json:"queuedSince,omitzero"`
	AttemptSince time.Time `json:"attemptSince,omitzero"`
	Failures     int       `json:"consecutiveFailures,omitempty"`
	LastError    string    `json:"lastError,omitempty"`
	NodeEligible bool      `json:"nodeEligible"`
	// Degraded lists what the driver holds back while it programs the
	// rest (at most maxDegradedShown, then how many more): the proxy is
	// still healthy.
	Degraded []string `json:"degraded,omitempty"`
	// DegradedParts counts them: what a caller off loopback sees instead
	// of the list and of LastError (no internals off the node).
	DegradedParts int `json:"degradedParts,omitempty"`
}

// maxDegradedShown bounds the degraded parts /healthz spells out.
const maxDegradedShown = 20

// Healthy reports whether the proxy keeps up with its changes.
func (p *Proxy) Healthy() bool {
	st := p.Status()
	return st.QueuedSince.IsZero() || p.now().Sub(st.QueuedSince) < p.Timeout
}

func (p *Proxy) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Ready reports whether the first sync is done and the proxy is healthy.
func (p *Proxy) Ready() bool { return !p.Status().LastSuccess.IsZero() && p.Healthy() }

// Live reports whether the sync loop turns: no attempt has been under way
// for longer than StallTimeout.
func (p *Proxy) Live() bool {
	since := p.Status().AttemptSince
	return since.IsZero() || p.now().Sub(since) < p.StallTimeout
}

// ServeHTTP answers /healthz.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.answer(w, r, p.Healthy()) }

// answer writes the status report with 200 when ok, else 503. The health
// port listens on every address (load balancers probe it): error texts
// and the names of degraded Services go only to callers on loopback.
func (p *Proxy) answer(w http.ResponseWriter, r *http.Request, ok bool) {
	st := p.Status()
	rep := proxyReport{LastUpdated: st.LastSuccess, CurrentTime: p.now(), QueuedSince: st.QueuedSince,
		AttemptSince: st.AttemptSince, Failures: st.Failures, NodeEligible: true}
	if st.LastError != nil {
		rep.LastError = st.LastError.Error()
	}
	rep.Degraded = st.Degraded
	if n := len(rep.Degraded); n > maxDegradedShown {
		rep.Degraded = append(rep.Degraded[:maxDegradedShown:maxDegradedShown], fmt.Sprintf("and %d more", n-maxDegradedShown))
	}
	if !fromLoopback(r) {
		rep.LastError, rep.Degraded, rep.DegradedParts = "", nil, len(st.Degraded)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if ok {
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(rep)
}

// Mux returns a handler with /healthz, /readyz and /livez.
func (p *Proxy) Mux() *http.ServeMux {
	m := http.NewServeMux()
	m.Handle("/healthz", p)
	m.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) { p.answer(w, r, p.Ready()) })
	m.HandleFunc("/livez", func(w http.ResponseWriter, r *http.Request) { p.answer(w, r, p.Live()) })
	return m
}

// fromLoopback: the request came from a loopback address.
func fromLoopback(r *http.Request) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}
