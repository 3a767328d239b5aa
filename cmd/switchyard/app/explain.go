package app

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/switchyard-proxy/switchyard/core/explain"
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
			var x *explain.Explanation
			if running != "" {
				var err error
				if x, err = fetchExplanation(cmd.Context(), running, from, to, dataplane); err != nil {
					return err
				}
			} else {
				// Checked before the objects are read: a usage error comes fast.
				if _, err := explain.ParseConnection(from, to, graph.Node{}); err != nil {
					return usageError{err}
				}
				v, err := src.snapshotOnce(cmd.Context(), nil, dataplane != "")
				if err != nil {
					return err
				}
				c, err := explain.ParseConnection(from, to, v.snap.Node)
				if err != nil {
					return usageError{err}
				}
				e := explain.Of(v.snap, v.tr, c)
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
	cmd.Flags().StringVar(&dataplane, "dataplane", "", "also ask what this dataplane does with the connection: with --running, the running driver's live dataplane (ovs: ofproto/trace); offline, a model (hns: its simulator)")
	cmd.Flags().StringVar(&running, "running", "", "the metrics address of a running switchyard (--metrics-bind-address, 127.0.0.1:10249): ask it, from its current graph")
	return cmd
}
