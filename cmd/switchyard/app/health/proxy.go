// Package health serves the proxy's own health (/healthz, /livez) and the
// health-check node ports of externalTrafficPolicy=Local LoadBalancer
// Services, as upstream kube-proxy does.
package health

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/switchyard-proxy/switchyard/core/runner"
)

// Proxy answers /healthz and /livez from the sync runner's status: healthy
// when nothing is queued, or the oldest queued change has waited less than
// Timeout (upstream uses twice the sync period).
type Proxy struct {
	Status  func() runner.Status
	Timeout time.Duration
	Now     func() time.Time // nil: time.Now
}

type proxyReport struct {
	LastUpdated  time.Time `json:"lastUpdated"`
	CurrentTime  time.Time `json:"currentTime"`
	QueuedSince  time.Time `json:"queuedSince,omitzero"`
	Failures     int       `json:"consecutiveFailures,omitempty"`
	LastError    string    `json:"lastError,omitempty"`
	NodeEligible bool      `json:"nodeEligible"`
	// Degraded lists what the driver holds back while it programs the
	// rest (at most maxDegradedShown, then how many more): the proxy is
	// still healthy.
	Degraded []string `json:"degraded,omitempty"`
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

// ServeHTTP answers /healthz and /livez alike.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	st := p.Status()
	rep := proxyReport{LastUpdated: st.LastSuccess, CurrentTime: p.now(), QueuedSince: st.QueuedSince,
		Failures: st.Failures, NodeEligible: true}
	if st.LastError != nil {
		rep.LastError = st.LastError.Error()
	}
	rep.Degraded = st.Degraded
	if n := len(rep.Degraded); n > maxDegradedShown {
		rep.Degraded = append(rep.Degraded[:maxDegradedShown:maxDegradedShown], fmt.Sprintf("and %d more", n-maxDegradedShown))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if p.Healthy() {
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(rep)
}

// Mux returns a handler with /healthz and /livez.
func (p *Proxy) Mux() *http.ServeMux {
	m := http.NewServeMux()
	m.Handle("/healthz", p)
	m.Handle("/livez", p)
	return m
}
