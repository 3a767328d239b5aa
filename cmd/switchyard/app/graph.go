package app

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/switchyard-proxy/switchyard/core/build"
	"github.com/switchyard-proxy/switchyard/core/graph"
)

func newGraphCommand() *cobra.Command {
	var src sourceOptions
	var output, from string
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Print the service graph the core computes for a node",
		Long: "Print, for one node, every service port with its frontends and the endpoints each kind of\n" +
			"traffic reaches (docs/graph-json.md). Refused input, and Services not proxied at all\n" +
			"(ExternalName, headless, another proxy's), are listed on stderr. With --from, the graph of\n" +
			"a running switchyard, and the state of each service port in its dataplane: programmed, or\n" +
			"degraded (held back while the rest is programmed, and why).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "json" && output != "table" {
				return usageError{fmt.Errorf("-o must be json or table, not %q", output)}
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			if from != "" {
				doc, err := fetchRunningGraph(cmd.Context(), from)
				if err != nil {
					return err
				}
				if output == "json" {
					return enc.Encode(doc)
				}
				return writeRunningTable(cmd.OutOrStdout(), doc)
			}
			v, err := src.snapshotOnce(cmd.Context(), nil, true)
			if err != nil {
				return err
			}
			v.printNotes(cmd.ErrOrStderr())
			if output == "json" {
				return enc.Encode(v.snap)
			}
			return writeTable(cmd.OutOrStdout(), v.snap, nil)
		},
	}
	src.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "json or table")
	cmd.Flags().StringVar(&from, "from", "", "the metrics address of a running switchyard (--metrics-bind-address, 127.0.0.1:10249): print its graph and what its dataplane holds back")
	return cmd
}

// writeRunningTable prints a running switchyard's graph with a STATE
// column, then what is held back and why.
func writeRunningTable(w io.Writer, doc *runningGraph) error {
	state := map[string]string{}
	for _, h := range doc.Degraded {
		if h.ServicePort != "" {
			state[h.ServicePort] = "degraded: " + h.Reason
		}
	}
	if err := writeTable(w, doc.Graph, state); err != nil {
		return err
	}
	if len(doc.Degraded) > 0 {
		fmt.Fprintf(w, "\n%d part(s) held back, the rest programmed:\n", len(doc.Degraded))
		for _, h := range doc.Degraded {
			name := h.ServicePort
			if name == "" {
				name = h.Part
			}
			fmt.Fprintf(w, "  %s: %s: %s\n", name, h.Reason, h.Message)
		}
	}
	return nil
}

func printRejections(w io.Writer, rejs []build.Rejection) {
	if len(rejs) == 0 {
		return
	}
	fmt.Fprintf(w, "%d part(s) of the input were refused:\n", len(rejs))
	for _, r := range rejs {
		fmt.Fprintf(w, "  %s\n", r)
	}
}

// writeTable prints one row per service port. Endpoints: "*" marks a local
// one, "(t)" a terminating one; an empty list shows what its frontends do.
// states, when not nil, adds a STATE column: a service port's entry, or
// "programmed".
func writeTable(w io.Writer, s graph.Snapshot, states map[string]string) error {
	fmt.Fprintf(w, "node %s", s.Node.Name)
	if s.Node.Zone != "" {
		fmt.Fprintf(w, " (zone %s)", s.Node.Zone)
	}
	if len(s.Node.IPs) > 0 {
		fmt.Fprintf(w, ", IPs %s", joinAddrs(s.Node.IPs, ""))
	}
	if len(s.Node.PodCIDRs) > 0 {
		fmt.Fprintf(w, ", pod CIDRs %s", joinPrefixes(s.Node.PodCIDRs))
	}
	fmt.Fprintf(w, ": %d service ports\n", len(s.ServicePorts))
	for _, p := range s.Peers {
		fmt.Fprintf(w, "peer %s: IPs %s, pod CIDRs %s\n", p.Name, joinAddrs(p.IPs, ""), joinPrefixes(p.PodCIDRs))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "SERVICE PORT\tFRONTENDS\tPOLICY int/ext\tAFFINITY\tINTERNAL ENDPOINTS\tEXTERNAL ENDPOINTS"
	if states != nil {
		head += "\tSTATE"
	}
	fmt.Fprintln(tw, head)
	for _, sp := range s.ServicePorts {
		aff := "-"
		if sp.SessionAffinity.ClientIP {
			aff = fmt.Sprintf("ClientIP %ds", sp.SessionAffinity.TimeoutSeconds)
		}
		ext := "-"
		if sp.ExternallyAccessible() {
			ext = endpointList(sp, sp.ExternalEndpoints)
			if sp.ShortCircuitEndpoints.Len() > 0 {
				ext += " | from this node: " + endpointList(sp, sp.ShortCircuitEndpoints)
			}
		}
		row := fmt.Sprintf("%s\t%s\t%s/%s\t%s\t%s\t%s", sp.Name, frontends(sp), sp.InternalTrafficPolicy,
			sp.ExternalTrafficPolicy, aff, endpointList(sp, sp.InternalEndpoints), ext)
		if states != nil {
			st, ok := states[sp.Name.String()]
			if !ok {
				st = "programmed"
			}
			row += "\t" + st
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

func frontends(sp *graph.ServicePort) string {
	port := ":" + strconv.Itoa(int(sp.Port))
	parts := []string{joinAddrs(sp.ClusterIPs, port)}
	if sp.NodePort != 0 {
		parts = append(parts, "nodePort "+strconv.Itoa(int(sp.NodePort)))
	}
	if len(sp.ExternalIPs) > 0 {
		parts = append(parts, "ext "+joinAddrs(sp.ExternalIPs, port))
	}
	if len(sp.LoadBalancerIPs) > 0 {
		lb := "lb " + joinAddrs(sp.LoadBalancerIPs, port)
		if len(sp.LoadBalancerSourceRanges) > 0 {
			var r []string
			for _, p := range sp.LoadBalancerSourceRanges {
				r = append(r, p.String())
			}
			lb += " from " + strings.Join(r, ",")
		}
		parts = append(parts, lb)
	}
	if sp.HealthCheckNodePort != 0 {
		parts = append(parts, "healthCheck "+strconv.Itoa(int(sp.HealthCheckNodePort)))
	}
	return strings.Join(parts, " ")
}

func joinAddrs(ips []netip.Addr, port string) string {
	var s []string
	for _, ip := range ips {
		if port != "" && ip.Is6() {
			s = append(s, "["+ip.String()+"]"+port)
		} else {
			s = append(s, ip.String()+port)
		}
	}
	return strings.Join(s, ",")
}

func endpointList(sp *graph.ServicePort, eps graph.EndpointList) string {
	if eps.Len() == 0 {
		var acts []string
		for _, f := range sp.Families().List() {
			acts = append(acts, string(sp.NoEndpointsAction(f)))
		}
		return "(none: " + strings.Join(acts, "/") + ")"
	}
	var s []string
	for e := range eps.All() {
		x := e.String()
		if e.Local {
			x += "*"
		}
		if e.Terminating {
			x += "(t)"
		}
		s = append(s, x)
	}
	return strings.Join(s, ",")
}

func joinPrefixes(ps []netip.Prefix) string {
	if len(ps) == 0 {
		return "-"
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return strings.Join(out, ",")
}
