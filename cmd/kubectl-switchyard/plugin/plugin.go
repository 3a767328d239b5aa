// Package plugin is `kubectl switchyard`: it finds the switchyard pod of a
// node and runs `switchyard explain --running` in it, against that pod's
// own metrics address (read-only).
package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Selector finds the chart's switchyard pods (charts/switchyard's
// selector labels).
const Selector = "app.kubernetes.io/name=switchyard"

// Container is the chart's container that runs switchyard.
const Container = "switchyard"

// Run runs the plugin with args and returns its exit code: 0, 1 for a
// failure, 2 for a usage error.
func Run(ctx context.Context, args []string, out, errOut io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(errOut)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(errOut, "Error:", err)
		var u usageError
		if errors.As(err, &u) {
			return 2
		}
		return 1
	}
	return 0
}

type usageError struct{ error }

// explainOptions are the flags of `kubectl switchyard explain`.
type explainOptions struct {
	kubeconfig, namespace, node, from, to, output, metrics, dataplane string
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{Use: "kubectl-switchyard", Short: "switchyard's kubectl plugin", SilenceUsage: true, SilenceErrors: true}
	var o explainOptions
	explain := &cobra.Command{
		Use:   "explain --node NODE --from SRC --to DST:PORT[/PROTO]",
		Short: "Ask a node's switchyard where a connection goes, and why",
		Long: "Find the switchyard pod of NODE and run `switchyard explain --running` in it: what that\n" +
			"node's proxy does with a new connection from SRC to DST:PORT, and why (docs/explain.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.node == "" || o.from == "" || o.to == "" {
				return usageError{errors.New("--node, --from and --to are required")}
			}
			config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
				&clientcmd.ClientConfigLoadingRules{ExplicitPath: o.kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence},
				&clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
			}
			client, err := kubernetes.NewForConfig(config)
			if err != nil {
				return err
			}
			pod, err := switchyardPod(cmd.Context(), client, o.namespace, o.node)
			if err != nil {
				return err
			}
			return execIn(cmd.Context(), config, client, pod, o.command(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := explain.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig (default: $KUBECONFIG, then ~/.kube/config)")
	f.StringVarP(&o.namespace, "namespace", "n", "", "the namespace switchyard is installed in (default: every namespace)")
	f.StringVar(&o.node, "node", "", "the node whose proxy to ask")
	f.StringVar(&o.from, "from", "", `the connection's source: a pod's IP, an outside address, or "node"`)
	f.StringVar(&o.to, "to", "", "the connection's destination: IP:PORT[/PROTO]")
	f.StringVarP(&o.output, "output", "o", "table", "json or table")
	f.StringVar(&o.dataplane, "dataplane", "", "also ask the node's dataplane, by its driver's name (ovs: ofproto/trace through the live bridge)")
	f.StringVar(&o.metrics, "metrics-address", "127.0.0.1:10249", "switchyard's metrics address in its pod (the chart's metrics.bindAddress and port)")
	root.AddCommand(explain)
	return root
}

// command is what runs in the pod.
func (o explainOptions) command() []string {
	cmd := []string{"switchyard", "explain", "--running", o.metrics, "--from", o.from, "--to", o.to, "-o", o.output}
	if o.dataplane != "" {
		cmd = append(cmd, "--dataplane", o.dataplane)
	}
	return cmd
}

// switchyardPod finds the running switchyard pod on node.
func switchyardPod(ctx context.Context, client kubernetes.Interface, namespace, node string) (*corev1.Pod, error) {
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: Selector,
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return nil, fmt.Errorf("listing switchyard's pods: %w", err)
	}
	for i := range pods.Items {
		// The field selector is the API server's; checked again here.
		if p := &pods.Items[i]; p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no running switchyard pod (%s) on node %s", Selector, node)
}
