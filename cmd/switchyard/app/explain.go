package app

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/switchyard-proxy/switchyard/core/graph"
)

func newExplainCommand() *cobra.Command {
	var src sourceOptions
	var output, from, to string
	cmd := &cobra.Command{
		Use:   "explain --from SRC --to DST:PORT[/PROTO]",
		Short: "Say where a new connection goes and why",
		Long: "Say what this node's proxy does with a new connection from SRC (a pod's IP, an outside\n" +
			"address, or \"node\" for the node itself) to DST:PORT (a ClusterIP, a node's address and\n" +
			"NodePort, an external IP or a load-balancer IP; PROTO is TCP, UDP or SCTP, TCP by default):\n" +
			"the Service port and frontend it reaches, the endpoint list that frontend uses and why,\n" +
			"every candidate endpoint and the rule that left each unused one out, session affinity, and\n" +
			"forward, reject or drop. Read from --file or an API server, as `switchyard graph`\n" +
			"(docs/explain.md has the JSON of -o json).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "json" && output != "table" {
				return usageError{fmt.Errorf("-o must be json or table, not %q", output)}
			}
			dst, port, proto, err := parseDestination(to)
			if err != nil {
				return usageError{err}
			}
			if from == "" {
				return usageError{fmt.Errorf("--from is required: a pod's IP, an outside address, or node")}
			}
			v, err := src.snapshotOnce(cmd.Context(), nil, false)
			if err != nil {
				return err
			}
			c := graph.Connection{Dst: dst, Port: port, Protocol: proto}
			if c.Src, c.FromThisNode, err = parseSource(from, v.snap.Node, dst); err != nil {
				return usageError{err}
			}
			x := explain(v.snap, v.tr, c)
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(x)
			}
			return writeExplanation(cmd.OutOrStdout(), x)
		},
	}
	src.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "json or table")
	cmd.Flags().StringVar(&from, "from", "", `the connection's source: a pod's IP, an outside address, or "node"`)
	cmd.Flags().StringVar(&to, "to", "", "the connection's destination: IP:PORT[/PROTO], [IPv6]:PORT[/PROTO]")
	return cmd
}

// parseDestination reads IP:PORT[/PROTO].
func parseDestination(s string) (netip.Addr, uint16, graph.Protocol, error) {
	proto := graph.TCP
	if i := strings.LastIndex(s, "/"); i >= 0 {
		proto = graph.Protocol(strings.ToUpper(s[i+1:]))
		s = s[:i]
		if !slices.Contains([]graph.Protocol{graph.TCP, graph.UDP, graph.SCTP}, proto) {
			return netip.Addr{}, 0, "", fmt.Errorf("--to: protocol %q: want TCP, UDP or SCTP", proto)
		}
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil || ap.Port() == 0 {
		return netip.Addr{}, 0, "", fmt.Errorf("--to %q: want IP:PORT[/PROTO] ([IPv6]:PORT for IPv6)", s)
	}
	return ap.Addr().Unmap(), ap.Port(), proto, nil
}

// parseSource reads --from: "node" is the node's address of dst's family;
// an address in the node's pod CIDRs or among its addresses starts on
// this node.
func parseSource(s string, node graph.Node, dst netip.Addr) (netip.Addr, bool, error) {
	if s == "node" {
		ip, ok := graph.FirstOfFamily(node.IPs, graph.FamilyOf(dst))
		if !ok {
			return netip.Addr{}, false, fmt.Errorf("--from node: node %s has no %s address", node.Name, graph.FamilyOf(dst))
		}
		return ip, true, nil
	}
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false, fmt.Errorf("--from %q: want an IP address or node", s)
	}
	ip = ip.Unmap()
	if graph.FamilyOf(ip) != graph.FamilyOf(dst) {
		return netip.Addr{}, false, fmt.Errorf("--from %s and --to %s are of different IP families", ip, dst)
	}
	here := slices.Contains(node.IPs, ip) || slices.ContainsFunc(node.PodCIDRs, func(p netip.Prefix) bool { return p.Contains(ip) })
	return ip, here, nil
}
