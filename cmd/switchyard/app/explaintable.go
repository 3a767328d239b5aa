package app

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/switchyard-proxy/switchyard/core/explain"
	"github.com/switchyard-proxy/switchyard/core/graph"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

// writeExplanation prints an explanation for people: the connection, then
// each route with its endpoints and why each unused one is left out.
func writeExplanation(w io.Writer, x explain.Explanation) error {
	where := "from outside this node"
	if x.Connection.FromThisNode {
		where = "from this node"
	}
	fmt.Fprintf(w, "node %s: %s -> %s (%s)\n", x.Node, x.Connection.From, x.Connection.To, where)
	if len(x.Routes) == 0 {
		fmt.Fprintln(w, "\nno Service has this frontend: switchyard leaves the connection alone")
		return nil
	}
	for _, r := range x.Routes {
		if err := writeRoute(w, r); err != nil {
			return err
		}
	}
	writeDataplane(w, x.Dataplane)
	return nil
}

// writeRoute prints one route: the list, topology, affinity, endpoints.
func writeRoute(w io.Writer, r explain.Route) error {
	fmt.Fprintf(w, "\n%s via %s: %s\n", r.ServicePort, r.Frontend, r.Action)
	fmt.Fprintf(w, "  the %s list: %s endpoints; topology %s (%s)", r.List, r.Policy, r.Topology.Mode, r.Topology.Why)
	if r.Fallback {
		fmt.Fprint(w, "; none ready: serving-and-terminating endpoints used")
	}
	fmt.Fprintln(w)
	if r.Action == graph.Forward {
		fmt.Fprintf(w, "  the endpoint sees the source: %s (%s)\n", r.SourceSeen, masqueradeText(r))
	}
	if r.SessionAffinity.ClientIP {
		fmt.Fprintf(w, "  session affinity: ClientIP, %d s\n", r.SessionAffinity.TimeoutSeconds)
	}
	if r.Disagreement != "" {
		fmt.Fprintf(w, "  BUG: the explanation disagrees with the graph: %s\n", r.Disagreement)
	}
	if err := writeEndpoints(w, r); err != nil {
		return err
	}
	for _, o := range r.OtherFamily {
		fmt.Fprintf(w, "  %s: never used (an IP family the Service does not have)\n", o)
	}
	return nil
}

// writeDataplane prints what the dataplane did with the connections.
func writeDataplane(w io.Writer, dp *explain.Dataplane) {
	if dp == nil {
		return
	}
	fmt.Fprintf(w, "\nthe dataplane (%s", dp.Name)
	if dp.Error != "" {
		fmt.Fprintf(w, ") could not be asked: %s\n", dp.Error)
		return
	}
	if dp.Simulated {
		fmt.Fprintf(w, ", simulated: %s", dp.Model)
	} else {
		fmt.Fprintf(w, ": %s", dp.Model)
	}
	fmt.Fprintf(w, "), %d connections:\n", dp.Connections)
	for _, k := range slices.Sorted(maps.Keys(dp.Reached)) {
		fmt.Fprintf(w, "  %d  %s\n", dp.Reached[k], k)
	}
	if dp.SrcSeen != "" {
		fmt.Fprintf(w, "  the backend sees the source %s", dp.SrcSeen)
		if dp.DSR {
			fmt.Fprint(w, " and answers the client directly (DSR)")
		}
		fmt.Fprintln(w)
	}
	if dp.Note != "" {
		fmt.Fprintf(w, "  %s\n", dp.Note)
	}
	writePath(w, dp.Path)
	writeCounts(w, dp.Counts)
	if dp.Disagreement != "" {
		fmt.Fprintf(w, "  BUG: the dataplane disagrees with the graph: %s\n", dp.Disagreement)
	} else {
		fmt.Fprintln(w, "  agrees with the graph")
	}
}

// masqueradeText says whether and why the connection is masqueraded.
func masqueradeText(r explain.Route) string {
	if r.Masquerade {
		return "masqueraded: " + string(r.MasqueradeWhy)
	}
	return "not masqueraded: " + string(r.MasqueradeWhy)
}

// writeCounts prints what the dataplane counted so far, by service port.
func writeCounts(w io.Writer, counts map[string]explain.Counts) {
	for _, sp := range slices.Sorted(maps.Keys(counts)) {
		c := counts[sp]
		fmt.Fprintf(w, "  counted so far for %s: %d connections, %d rejected, %d dropped\n", sp, c.Connections, c.Rejected, c.Dropped)
		for _, ep := range slices.Sorted(maps.Keys(c.Endpoints)) {
			fmt.Fprintf(w, "    %d  %s\n", c.Endpoints[ep], ep)
		}
	}
}

// writePath prints the first connection's way through the dataplane.
func writePath(w io.Writer, path []dataplanes.TraceStep) {
	if len(path) == 0 {
		return
	}
	fmt.Fprintln(w, "  the first connection's way:")
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	for _, s := range path {
		fmt.Fprintf(tw, "    %s\t%s\t%s\n", s.Table, dash(s.Match), s.Did)
	}
	_ = tw.Flush()
	for line := range strings.Lines(b.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
}

func writeEndpoints(w io.Writer, r explain.Route) error {
	if len(r.Endpoints) == 0 {
		fmt.Fprintln(w, "  no endpoints of this family")
		return nil
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ENDPOINT\tNODE\tZONE\tREADY\tSERVING\tTERMINATING\tUSED\tLEFT OUT BY")
	for _, e := range r.Endpoints {
		used := yesNo(e.Used)
		if e.Used && e.Hairpin {
			used = "yes (hairpin: masqueraded)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Endpoint, dash(e.Node), dash(e.Zone), yesNo(e.Ready), yesNo(e.Serving),
			yesNo(e.Terminating), used, dash(string(e.Excluded)))
	}
	return tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
