package app

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

func newRenderCommand() *cobra.Command {
	var src sourceOptions
	var dataplane string
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Print what a driver would program for the graph, touching no dataplane",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := dataplanes.Get(dataplane)
			if err != nil {
				return usageError{err}
			}
			v, err := src.snapshotOnce(cmd.Context(), dataplanes.AnnotationsOf(f), dataplanes.ReadsPeers(f))
			if err != nil {
				return err
			}
			v.printNotes(cmd.ErrOrStderr())
			return f.Render(cmd.OutOrStdout(), dataplanes.Env{}, v.snap)
		},
	}
	src.addFlags(cmd.Flags())
	cmd.Flags().StringVar(&dataplane, "dataplane", "", "the driver to render with (see `switchyard drivers`)")
	addDriverFlags(cmd)
	return cmd
}

// addDriverFlags adds every registered driver's own flags (--ovs-*, ...).
func addDriverFlags(cmd *cobra.Command) {
	for _, n := range dataplanes.Names() {
		f, _ := dataplanes.Get(n)
		f.AddFlags(cmd.Flags())
	}
}

func newCleanupCommand() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove everything a driver programmed, and nothing it does not own",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := dataplanes.Get(o.dataplane)
			if err != nil {
				return usageError{err}
			}
			src := sourceOptions{nodeName: o.src.nodeName, nodePortRange: ""}
			if _, err := src.complete(); err != nil {
				return usageError{err}
			}
			env := dataplanes.Env{}
			if c, ok := f.(dataplanes.Cleaner); ok {
				return c.Cleanup(cmd.Context(), env)
			}
			d, err := f.New(cmd.Context(), env)
			if err != nil {
				return err
			}
			defer d.Close()
			return d.Cleanup(cmd.Context())
		},
	}
	// The flags of run, so that run's --config file works here too.
	o.addFlags(cmd.Flags())
	addDriverFlags(cmd)
	return cmd
}

func newInstallCommand() *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Put on the node what a driver needs before it runs (ovs: switchyard-cni and its CNI network configuration)",
		Long: "Put on the node what a driver needs before it runs (ovs: switchyard-cni and its CNI network configuration).\n" +
			"The chart runs this in the DaemonSet's init container; `switchyard cleanup` removes it again.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := dataplanes.Get(o.dataplane)
			if err != nil {
				return usageError{err}
			}
			in, ok := f.(dataplanes.Installer)
			if !ok {
				return usageError{fmt.Errorf("dataplane %s needs nothing installed", o.dataplane)}
			}
			return in.Install(cmd.Context(), dataplanes.Env{})
		},
	}
	// The flags of run, so that run's --config file works here too.
	o.addFlags(cmd.Flags())
	addDriverFlags(cmd)
	return cmd
}
