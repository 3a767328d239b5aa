// Package ovstrace reads what ovs-vswitchd's `ofproto/trace` prints for
// one packet through the bridge: the tables it went through, in the
// pipeline's names, the endpoint the select group chose for its 5-tuple,
// the source NAT, and what became of it. It is pure: the driver runs the
// trace (ovs/trace.go).
//
// ofproto/trace follows a ct action into its recirculation with
// ct_state=trk|new and simulates the NAT on the packet's fields, but it
// clears conntrack's fields of the original direction (ct_nw_dst,
// ct_tp_dst): a flow matching those (UDP frontends, docs/ovs.md
// "Fragments") does not match in a trace as it does in the datapath.
package ovstrace

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/switchyard-proxy/switchyard/dataplanes"
	"github.com/switchyard-proxy/switchyard/ovs/pipeline"
)

// Verdict is what became of the traced packet.
type Verdict string

// The verdicts.
const (
	Output Verdict = "output" // sent out of a port
	Reject Verdict = "reject" // to the controller, which answers with a reset or unreachable
	Drop   Verdict = "drop"
)

// Walk is one traced packet.
type Walk struct {
	Steps []dataplanes.TraceStep
	// Endpoint is the destination the chosen bucket (or affinity flow)
	// DNATed the connection to; invalid when none did.
	Endpoint netip.AddrPort
	// SNAT is the source the bridge NATed the connection to; invalid when
	// it kept its own.
	SNAT    netip.Addr
	Verdict Verdict
}

var (
	// " 6. tcp,nw_dst=10.96.0.10,tp_dst=80, priority 200, cookie 0x5359..."
	// (the match is absent from a match-all flow).
	tableLine = regexp.MustCompile(`^\s*(\d+)\. (?:(.*), )?priority \d+, cookie 0x[0-9a-f]+$`)
	bucketUse = regexp.MustCompile(`-> using bucket (\d+)`)
	groupUse  = regexp.MustCompile(`^group:(\d+)$`)
	natTo     = regexp.MustCompile(`^nat\((dst|src)=([^)]+)\)$`)
	outPort   = regexp.MustCompile(`-> output port is (\d+)`)
)

// Parse reads ofproto/trace's output. It fails when the output has no
// datapath actions (not a trace).
func Parse(out string) (Walk, error) {
	var w Walk
	var step *dataplanes.TraceStep
	final := ""
	for _, line := range strings.Split(out, "\n") {
		text := strings.TrimSpace(line)
		if m := tableLine.FindStringSubmatch(line); m != nil {
			w.Steps = append(w.Steps, dataplanes.TraceStep{Table: tableName(m[1]), Match: m[2]})
			step = &w.Steps[len(w.Steps)-1]
			continue
		}
		if d, ok := strings.CutPrefix(text, "Datapath actions: "); ok {
			final, step = d, nil
			continue
		}
		if step != nil {
			if did := w.read(text); did != "" {
				step.Did = joinDid(step.Did, did)
			}
		}
	}
	if final == "" {
		return Walk{}, fmt.Errorf("not an ofproto/trace answer: %.200q", out)
	}
	w.Verdict = verdictOf(final)
	return w, nil
}

// read takes what one action line says that a person wants to see, and
// notes the NATs.
func (w *Walk) read(text string) string {
	switch {
	case groupUse.MatchString(text):
		return "select group " + groupUse.FindStringSubmatch(text)[1]
	case bucketUse.MatchString(text):
		return "bucket " + bucketUse.FindStringSubmatch(text)[1]
	case natTo.MatchString(text):
		m := natTo.FindStringSubmatch(text)
		if m[1] == "dst" {
			w.Endpoint, _ = netip.ParseAddrPort(m[2])
			return "DNAT to " + m[2]
		}
		w.SNAT, _ = netip.ParseAddr(m[2])
		return "SNAT to " + m[2]
	case outPort.MatchString(text):
		return "out port " + outPort.FindStringSubmatch(text)[1]
	case text == "IN_PORT":
		return "back out its ingress port"
	case strings.HasPrefix(text, "controller("):
		return "to the controller"
	case text == "drop":
		return "drop"
	case strings.HasPrefix(text, "learn("):
		return "learn the affinity"
	}
	return ""
}

func joinDid(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// tableName is the pipeline's name of a table number.
func tableName(id string) string {
	for _, t := range pipeline.Tables {
		if fmt.Sprint(t.ID) == id {
			return t.Name
		}
	}
	return "table " + id
}

// verdictOf reads the last datapath actions.
func verdictOf(actions string) Verdict {
	switch {
	case actions == "drop":
		return Drop
	case strings.Contains(actions, "userspace(") && strings.Contains(actions, "controller("):
		return Reject
	}
	return Output
}
