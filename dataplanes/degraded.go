package dataplanes

import (
	"fmt"
	"strings"
	"time"

	"github.com/switchyard-proxy/switchyard/core/graph"
)

// Degraded is what a driver's Sync or Apply returns when it programmed
// the graph but for some parts it holds back: a service port whose flows
// or load balancer the dataplane refused, a pod's port. Everything else is
// programmed; a held part keeps what the dataplane had of it; the driver
// tries it again by itself. The runner counts the call as done (the graph
// is not handed again, and the node stays healthy), shows the parts as
// degraded (/healthz, metrics), and calls the driver again at Retry, with
// an empty delta when nothing else changed. It implements runner.Partial.
//
// A driver reports each held service port once as a Problem too (a
// Warning Event on its Service).
type Degraded struct {
	Parts []DegradedPart
	Retry time.Time // zero: at the next full sync
}

// DegradedPart is one part held back.
type DegradedPart struct {
	// ServicePort is the service port held back; zero for a part that is
	// not a service port's (Part names it).
	ServicePort graph.ServicePortName
	Part        string // "pod/7", "static pipeline", ...
	Reason      string // CamelCase, as the Problem reported ("OVSRefused")
	Message     string // what the dataplane said, in at most MaxMessage bytes
}

// MaxMessage bounds a part's message (and a Problem's): errors name the
// object and its size, never carry it whole.
const MaxMessage = 1024

// Name is the part's name: its service port, or Part.
func (p DegradedPart) Name() string {
	if p.ServicePort.Name != "" {
		return p.ServicePort.String()
	}
	return p.Part
}

func (d *Degraded) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d part(s) held back, the rest programmed:", len(d.Parts))
	for i, p := range d.Parts {
		if i == 5 {
			fmt.Fprintf(&b, " and %d more", len(d.Parts)-i)
			break
		}
		fmt.Fprintf(&b, " %s (%s: %s);", p.Name(), p.Reason, Bounded(p.Message, 200))
	}
	return b.String()
}

// RetryAt implements runner.Partial.
func (d *Degraded) RetryAt() time.Time { return d.Retry }

// Held implements runner.Partial: a line per part.
func (d *Degraded) Held() []string {
	out := make([]string, len(d.Parts))
	for i, p := range d.Parts {
		out[i] = fmt.Sprintf("%s: %s: %s", p.Name(), p.Reason, p.Message)
	}
	return out
}

// Bounded cuts s to at most n bytes, saying it did.
func Bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const more = "… (cut)"
	return s[:max(0, n-len(more))] + more
}
