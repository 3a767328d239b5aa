package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/switchyard-proxy/switchyard/core/explain"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/core/tracker"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// A running switchyard serves, on its metrics address, its graph and the
// parts its driver holds back (GET /graph; `switchyard graph --from ADDR`
// prints them), and explanations (GET /explain; `switchyard explain
// --running ADDR`). Both only read.

// runningGraph is what GET /graph answers.
type runningGraph struct {
	Graph    graph.Snapshot `json:"graph"`
	Degraded []heldPart     `json:"degraded"`
}

// heldPart is a dataplanes.DegradedPart as JSON.
type heldPart struct {
	ServicePort string `json:"servicePort,omitempty"` // "namespace/name:port/PROTOCOL"
	Part        string `json:"part,omitempty"`        // when not a service port's
	Reason      string `json:"reason"`
	Message     string `json:"message"`
}

func heldParts(parts []dataplanes.DegradedPart) []heldPart {
	out := make([]heldPart, 0, len(parts))
	for _, p := range parts {
		h := heldPart{Part: p.Part, Reason: p.Reason, Message: p.Message}
		if p.ServicePort.Name != "" {
			h.ServicePort = p.ServicePort.String()
		}
		out = append(out, h)
	}
	return out
}

// graphHandler serves the tracker's current graph and what the
// programmer's driver holds back.
func graphHandler(tr *tracker.Tracker, p *programmer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		doc := runningGraph{Graph: tr.Snapshot(), Degraded: heldParts(p.heldBack())}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	})
}

// fetchRunningGraph reads GET /graph of the switchyard whose metrics
// address is addr.
func fetchRunningGraph(ctx context.Context, addr string) (*runningGraph, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/graph", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the running switchyard's graph: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET http://%s/graph: %s: %s", addr, resp.Status, body)
	}
	var doc runningGraph
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("GET http://%s/graph: %w", addr, err)
	}
	return &doc, nil
}

// noteHeld records what the driver's last successful call held back
// (nothing after a plain success; unchanged after a failure).
func (p *programmer) noteHeld(err error) {
	var d *dataplanes.Degraded
	switch {
	case err == nil:
		p.held.Store(nil)
	case errors.As(err, &d):
		parts := d.Parts
		p.held.Store(&parts)
	}
}

// heldBack is what the driver holds back now.
func (p *programmer) heldBack() []dataplanes.DegradedPart {
	if h := p.held.Load(); h != nil {
		return *h
	}
	return nil
}

// explainHandler answers GET /explain?from=SRC&to=DST:PORT[/PROTO] from
// the tracker's current graph (switchyard explain --running); with
// &dataplane=NAME (this switchyard's driver), the driver's dataplane is
// asked too (dataplanes.LiveTracer).
func explainHandler(tr *tracker.Tracker, name string, d dataplanes.Driver) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		snap := tr.Snapshot()
		q := r.URL.Query()
		c, err := explain.ParseConnection(q.Get("from"), q.Get("to"), snap.Node)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		x := explain.Of(snap, tr, c)
		if dp := q.Get("dataplane"); dp != "" {
			if dp != name {
				http.Error(w, fmt.Sprintf("dataplane=%s: this switchyard runs the %s driver", dp, name), http.StatusBadRequest)
				return
			}
			if err := traceLive(r.Context(), name, d, c, &x); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(x)
	})
}

// fetchExplanation asks the switchyard whose metrics address is addr.
func fetchExplanation(ctx context.Context, addr, from, to, dataplane string) (*explain.Explanation, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	q := url.Values{"from": {from}, "to": {to}}
	if dataplane != "" {
		q.Set("dataplane", dataplane)
	}
	u := url.URL{Scheme: "http", Host: addr, Path: "/explain", RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("asking the running switchyard: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s: %s", u.String(), resp.Status, strings.TrimSpace(string(body)))
	}
	var x explain.Explanation
	if err := json.NewDecoder(resp.Body).Decode(&x); err != nil {
		return nil, fmt.Errorf("GET %s: %w", u.String(), err)
	}
	return &x, nil
}
