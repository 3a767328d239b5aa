package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
)

func init() {
	// Tests and embedding programs may build the command more than once.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
}

// Main runs the command with the process's arguments until SIGINT or
// SIGTERM, and returns the exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logs.InitLogs()
	defer logs.FlushLogs()
	return Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

// Run executes the command with args and returns the exit code: 0 on
// success, 1 on failure (one clear line on stderr), 2 on a usage error.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := NewCommand(stdout, stderr)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "switchyard: %v\n", err)
		if _, usage := err.(usageError); usage {
			return 2
		}
		return 1
	}
	return 0
}

// usageError marks errors in how the command was called.
type usageError struct{ error }

// NewCommand builds the root command and its subcommands.
func NewCommand(stdout, stderr io.Writer) *cobra.Command {
	var configFile string
	logOpts := logsapi.NewLoggingConfiguration()
	root := &cobra.Command{
		Use:   "switchyard",
		Short: "A Kubernetes service proxy with pluggable dataplanes",
		Long: "Switchyard watches Services, EndpointSlices and this Node, computes the service graph with\n" +
			"kube-proxy's semantics, and hands the changes to a dataplane driver (see `switchyard drivers`).",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfig(cmd.Flags(), configFile); err != nil {
				return usageError{err}
			}
			if err := logsapi.ValidateAndApply(logOpts, nil); err != nil {
				return usageError{err}
			}
			return nil
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().StringVar(&configFile, "config", "", "YAML file of settings keyed by flag name (flags and SWITCHYARD_* variables win over it)")
	logsapi.AddFlags(logOpts, root.PersistentFlags())

	root.AddCommand(newRunCommand(), newGraphCommand(), newExplainCommand(), newRenderCommand(), newCleanupCommand(), newInstallCommand(),
		newDriversCommand(), newVersionCommand())
	return root
}
