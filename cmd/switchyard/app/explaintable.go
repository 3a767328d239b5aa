package app

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// writeExplanation prints an explanation for people: the connection, then
// each route with its endpoints and why each unused one is left out.
func writeExplanation(w io.Writer, x explanation) error {
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
		fmt.Fprintf(w, "\n%s via %s: %s\n", r.ServicePort, r.Frontend, r.Action)
		fmt.Fprintf(w, "  the %s list: %s endpoints; topology %s (%s)", r.List, r.Policy, r.Topology.Mode, r.Topology.Why)
		if r.Fallback {
			fmt.Fprint(w, "; none ready: serving-and-terminating endpoints used")
		}
		fmt.Fprintln(w)
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
	}
	return nil
}

func writeEndpoints(w io.Writer, r explainedRoute) error {
	if len(r.Endpoints) == 0 {
		fmt.Fprintln(w, "  no endpoints of this family")
		return nil
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ENDPOINT\tNODE\tZONE\tREADY\tSERVING\tTERMINATING\tUSED\tLEFT OUT BY")
	for _, e := range r.Endpoints {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Endpoint, dash(e.Node), dash(e.Zone), yesNo(e.Ready), yesNo(e.Serving),
			yesNo(e.Terminating), yesNo(e.Used), dash(string(e.Excluded)))
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
