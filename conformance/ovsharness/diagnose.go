//go:build linux

package ovsharness

import (
	"fmt"
	"strings"

	"github.com/switchyard-proxy/switchyard/conformance"
	"github.com/switchyard-proxy/switchyard/ovs/ovstest"
)

// diagnoseLines bounds how many lines of each listing a diagnosis keeps.
const diagnoseLines = 25

// Diagnose implements conformance.Diagnoser: for a connection that went
// unanswered, what each node's ovs-vswitchd showed right after (its
// nonzero drop counters, its ports' drops, the datapath flows and the
// conntrack entries naming the destination, its tunnel neighbours), then
// whether a new connection from the same source is answered.
func (h *Harness) Diagnose(p conformance.Probe) string {
	return h.w.Diagnose(p)
}

// Diagnose is Harness.Diagnose for a world.
func (w *World) Diagnose(p conformance.Probe) string {
	var b strings.Builder
	dst := p.Dst.Addr().String()
	for _, n := range []*ovstest.Node{w.Node1, w.Node2} {
		fmt.Fprintf(&b, "\n  %s:", n.Name)
		section(&b, n, "drop counters", []string{"coverage/show"}, func(l string) bool {
			return strings.Contains(l, "drop") && !strings.Contains(l, "never hit")
		})
		port := ""
		section(&b, n, "port drops", []string{"dpctl/show", "-s"}, func(l string) bool {
			if strings.HasPrefix(strings.TrimSpace(l), "port ") {
				port = strings.TrimSpace(l)
				return false
			}
			if !strings.Contains(l, "dropped:") || strings.Contains(l, "dropped:0 ") || strings.Contains(l, "dropped:?") {
				return false
			}
			b.WriteString("\n      " + port) // the port whose drops follow
			return true
		})
		section(&b, n, "datapath flows to or from "+dst, []string{"dpctl/dump-flows"}, func(l string) bool {
			return strings.Contains(l, dst)
		})
		section(&b, n, "conntrack entries naming "+dst, []string{"dpctl/dump-conntrack"}, func(l string) bool {
			return strings.Contains(l, dst)
		})
		if w.Cluster.Overlay {
			section(&b, n, "tunnel neighbours", []string{"tnl/neigh/show"}, func(string) bool { return true })
		}
	}
	again := w.Probe(p)
	fmt.Fprintf(&b, "\n  a new connection at once: %s %s %s", again.Outcome, again.Identity, again.Detail)
	return b.String()
}

// section appends the lines of an ovs-appctl listing that keep holds.
func section(b *strings.Builder, n *ovstest.Node, title string, args []string, keep func(string) bool) {
	out, err := n.OVS.AppctlErr(args...)
	if err != nil {
		fmt.Fprintf(b, "\n    %s: %v", title, err)
		return
	}
	fmt.Fprintf(b, "\n    %s:", title)
	kept := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == "" || !keep(l) {
			continue
		}
		if kept++; kept > diagnoseLines {
			b.WriteString("\n      …")
			break
		}
		b.WriteString("\n      " + strings.TrimSpace(l))
	}
	if kept == 0 {
		b.WriteString(" none")
	}
}
