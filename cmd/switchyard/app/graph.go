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
	var output string
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Print the service graph the core computes for a node",
		Long: "Print, for one node, every service port with its frontends and the endpoints each kind of\n" +
			"traffic reaches (docs/graph-json.md). Refused input, and Services not proxied at all\n" +
			"(ExternalName, headless, another proxy's), are listed on stderr.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "json" && output != "table" {
				return usageError{fmt.Errorf("-o must be json or table, not %q", output)}
			}
			v, err := src.snapshotOnce(cmd.Context(), nil, true)
			if err != nil {
				return err
			}
			v.printNotes(cmd.ErrOrStderr())
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(v.snap)
			}
			return writeTable(cmd.OutOrStdout(), v.snap)
		},
	}
	src.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "json or table")
	return cmd
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
func writeTable(w io.Writer, s graph.Snapshot) error {
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
	fmt.Fprintln(tw, "SERVICE PORT\tFRONTENDS\tPOLICY int/ext\tAFFINITY\tINTERNAL ENDPOINTS\tEXTERNAL ENDPOINTS")
	for _, sp := range s.ServicePorts {
		aff := "-"
		if sp.SessionAffinity.ClientIP {
			aff = fmt.Sprintf("ClientIP %ds", sp.SessionAffinity.TimeoutSeconds)
		}
		ext := "-"
		if sp.ExternallyAccessible() {
			ext = endpointList(sp, sp.ExternalEndpoints)
			if len(sp.ShortCircuitEndpoints) > 0 {
				ext += " | from this node: " + endpointList(sp, sp.ShortCircuitEndpoints)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s/%s\t%s\t%s\t%s\n", sp.Name, frontends(sp), sp.InternalTrafficPolicy,
			sp.ExternalTrafficPolicy, aff, endpointList(sp, sp.InternalEndpoints), ext)
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

func endpointList(sp *graph.ServicePort, eps []graph.Endpoint) string {
	if len(eps) == 0 {
		var acts []string
		for _, f := range sp.Families().List() {
			acts = append(acts, string(sp.NoEndpointsAction(f)))
		}
		return "(none: " + strings.Join(acts, "/") + ")"
	}
	var s []string
	for _, e := range eps {
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
