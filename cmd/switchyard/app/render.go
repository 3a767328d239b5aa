package app

import (
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
			snap, refused, err := src.snapshotOnce(cmd.Context(), dataplanes.AnnotationsOf(f))
			if err != nil {
				return err
			}
			printRejections(cmd.ErrOrStderr(), refused)
			return f.Render(cmd.OutOrStdout(), dataplanes.Env{NodeName: src.nodeName}, snap)
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
	var dataplane, nodeName string
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove everything a driver programmed, and nothing it does not own",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := dataplanes.Get(dataplane)
			if err != nil {
				return usageError{err}
			}
			src := sourceOptions{nodeName: nodeName, nodePortRange: ""}
			if _, err := src.complete(); err != nil {
				return usageError{err}
			}
			d, err := f.New(cmd.Context(), dataplanes.Env{NodeName: src.nodeName})
			if err != nil {
				return err
			}
			defer d.Close()
			return d.Cleanup(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&dataplane, "dataplane", "", "the driver whose state to remove")
	cmd.Flags().StringVar(&nodeName, "node-name", "", "the node this proxy runs on (default: the host name)")
	addDriverFlags(cmd)
	return cmd
}
