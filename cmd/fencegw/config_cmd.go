package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/config"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check a configuration (validate FILE) or print an annotated example",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "validate FILE",
		Short: "Check a configuration; exit 1 with every error, naming its field",
		Args:  exactArgs(1, "the configuration FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := config.Load(args[0])
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "invalid configuration:\n%s\n", indent(err.Error()))
				return reported(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: valid (%d routes, %s store)\n", args[0], len(c.Routes), config.KindOf(c.Store))
			return nil
		},
	}, &cobra.Command{
		Use:   "example",
		Short: "Print an annotated example configuration",
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(cmd.OutOrStdout(), config.Example)
			return nil
		},
	})
	return cmd
}
