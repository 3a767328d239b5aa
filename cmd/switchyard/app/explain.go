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
	var output, from, to, running, dataplane string
	cmd := &cobra.Command{
		Use:   "explain --from SRC --to DST:PORT[/PROTO]",
		Short: "Say where a new connection goes and why",
		Long: "Say what this node's proxy does with a new connection from SRC (a pod's IP, an outside\n" +
			"address, or \"node\" for the node itself) to DST:PORT (a ClusterIP, a node's address and\n" +
			"NodePort, an external IP or a load-balancer IP; PROTO is TCP, UDP or SCTP, TCP by default):\n" +
			"the Service port and frontend it reaches, the endpoint list that frontend uses and why,\n" +
			"every candidate endpoint and the rule that left each unused one out, session affinity, and\n" +
			"forward, reject or drop. Read from --file or an API server, as `switchyard graph`, or\n" +
			"asked of a running switchyard (--running; read-only). docs/explain.md has the JSON of -o json.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "json" && output != "table" {
				return usageError{fmt.Errorf("-o must be json or table, not %q", output)}
			}
			var x *explanation
			if running != "" {
				var err error
				if x, err = fetchExplanation(cmd.Context(), running, from, to); err != nil {
					return err
				}
			} else {
				// Checked before the objects are read: a usage error comes fast.
				if _, err := parseConnection(from, to, graph.Node{}); err != nil {
					return usageError{err}
				}
				v, err := src.snapshotOnce(cmd.Context(), nil, dataplane != "")
				if err != nil {
					return err
				}
				c, err := parseConnection(from, to, v.snap.Node)
				if err != nil {
					return usageError{err}
				}
				e := explain(v.snap, v.tr, c)
				x = &e
				if dataplane != "" {
					if err := traceOffline(cmd.Context(), dataplane, v.snap, c, x); err != nil {
						return err
					}
				}
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(x)
			}
			return writeExplanation(cmd.OutOrStdout(), *x)
		},
	}
	src.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "table", "json or table")
	cmd.Flags().StringVar(&from, "from", "", `the connection's source: a pod's IP, an outside address, or "node"`)
	cmd.Flags().StringVar(&to, "to", "", "the connection's destination: IP:PORT[/PROTO], [IPv6]:PORT[/PROTO]")
	cmd.Flags().StringVar(&dataplane, "dataplane", "", "also ask what this dataplane does with the connection (offline: hns, through its simulator)")
	cmd.Flags().StringVar(&running, "running", "", "the metrics address of a running switchyard (--metrics-bind-address, 127.0.0.1:10249): ask it, from its current graph")
	return cmd
}

// parseConnection reads --from and --to as a connection on node (the zero
// node: checks the syntax only).
func parseConnection(from, to string, node graph.Node) (graph.Connection, error) {
	dst, port, proto, err := parseDestination(to)
	if err != nil {
		return graph.Connection{}, err
	}
	if from == "" {
		return graph.Connection{}, fmt.Errorf("--from is required: a pod's IP, an outside address, or node")
	}
	c := graph.Connection{Dst: dst, Port: port, Protocol: proto}
	if node.Name == "" && from == "node" {
		return c, nil
	}
	c.Src, c.FromThisNode, err = parseSource(from, node, dst)
	return c, err
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
