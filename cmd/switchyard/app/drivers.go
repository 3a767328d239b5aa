package app

import (
	"fmt"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/switchyard-proxy/switchyard/dataplanes"
)

func newDriversCommand() *cobra.Command {
	var namesOnly bool
	cmd := &cobra.Command{
		Use:   "drivers",
		Short: "List the dataplane drivers built into this binary and what each can program",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			names := dataplanes.Names()
			if namesOnly {
				for _, n := range names {
					fmt.Fprintln(w, n)
				}
				return nil
			}
			if len(names) == 0 {
				fmt.Fprintln(w, "no dataplane drivers are built into this binary")
				return nil
			}
			for _, n := range names {
				f, _ := dataplanes.Get(n)
				caps := f.Capabilities()
				fmt.Fprintf(w, "%s: %s\n", n, f.Description())
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				for _, c := range append(append([]dataplanes.Capability{}, dataplanes.All...), dataplanes.NodeCapabilities...) {
					if caps.Has(c) {
						fmt.Fprintf(tw, "  %s\tyes\n", c)
					} else {
						fmt.Fprintf(tw, "  %s\tno: %s\n", c, caps.Reason(c))
					}
				}
				tw.Flush()
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&namesOnly, "names", false, "print only the names, one per line")
	return cmd
}

// Version is set at build time (-ldflags "-X .../app.Version=v1.2.3").
var Version = ""

func versionString() string {
	v := Version
	info, ok := debug.ReadBuildInfo()
	if v == "" && ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if v == "" {
		v = "dev"
	}
	var rev []string
	if ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
				rev = append(rev, s.Key+"="+s.Value)
			}
		}
		rev = append(rev, info.GoVersion)
	}
	return strings.TrimSpace(v + " " + strings.Join(rev, " "))
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "switchyard %s\n", versionString())
		},
	}
}
