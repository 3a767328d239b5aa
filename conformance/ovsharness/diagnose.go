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
// nonzero drop counters, its ports' drops, the datapath flows naming the
// destination, the conntrack entries naming it that share their reply
// tuple with another (two connections conntrack cannot tell apart:
// docs/ovs.md "Source-port clashes"), its tunnel neighbours), then
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
		section(&b, "drop counters", listOf(n, "coverage/show"), func(l string) bool {
			return strings.Contains(l, "drop") && !strings.Contains(l, "never hit")
		})
		port := ""
		section(&b, "port drops", listOf(n, "dpctl/show", "-s"), func(l string) bool {
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
		section(&b, "datapath flows to or from "+dst, listOf(n, "dpctl/dump-flows"), func(l string) bool {
			return strings.Contains(l, dst)
		})
		conntrack := listOf(n, "dpctl/dump-conntrack")
		shared := sharedReplies(conntrack.out)
		section(&b, "conntrack entries naming "+dst+" whose reply tuple another entry has too", conntrack, func(l string) bool {
			return strings.Contains(l, dst) && shared[replyOf(l)] > 1
		})
		if w.Cluster.Overlay {
			section(&b, "tunnel neighbours", listOf(n, "tnl/neigh/show"), func(string) bool { return true })
		}
	}
	again := w.Probe(p)
	fmt.Fprintf(&b, "\n  a new connection at once: %s %s %s", again.Outcome, again.Identity, again.Detail)
	return b.String()
}

// listing is what one ovs-appctl command printed, or why it did not.
type listing struct {
	out string
	err error
}

// listOf runs ovs-appctl on a node's ovs-vswitchd once.
func listOf(n *ovstest.Node, args ...string) listing {
	out, err := n.OVS.AppctlErr(args...)
	return listing{out, err}
}

// section appends the lines of a listing that keep holds.
func section(b *strings.Builder, title string, l listing, keep func(string) bool) {
	if l.err != nil {
		fmt.Fprintf(b, "\n    %s: %v", title, l.err)
		return
	}
	out := l.out
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

// sharedReplies counts a conntrack dump's entries by zone and reply tuple.
func sharedReplies(out string) map[string]int {
	count := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		if r := replyOf(l); r != "" {
			count[r]++
		}
	}
	return count
}

// replyOf is a dump-conntrack line's reply tuple with its zone ("" if it
// has none).
func replyOf(line string) string {
	i := strings.Index(line, "reply=(")
	if i < 0 {
		return ""
	}
	j := strings.Index(line[i:], ")")
	zone := ""
	if k := strings.Index(line, "zone="); k >= 0 {
		zone, _, _ = strings.Cut(line[k:], ",")
	}
	return zone + " " + line[i:i+j+1]
}
