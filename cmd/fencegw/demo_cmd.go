package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/cmd/fencegw/internal/demo"
)

// newDemoCmd tells the seed article's story in this process (package
// cmd/fencegw/internal/demo). It exits 0 when the story went as told, and 1
// naming the step that did not.
func newDemoCmd() *cobra.Command {
	var quiet bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Tell a stale leader's story in-process, with no set-up",
		Long: "Runs a stale leader's story in this process, with no services and no set-up: an embedded\n" +
			"store, a sample email API and the gateway, all on 127.0.0.1. Exits 0 when every step\n" +
			"behaves as told, 1 otherwise.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			err := demo.Run(ctx, demo.Options{Out: cmd.OutOrStdout(), Quiet: quiet, Version: versionString()})
			var f *demo.Failure
			switch {
			case err == nil:
				return nil
			case ctx.Err() != nil && errors.As(err, &f):
				return failuref("interrupted at t=%.1fs", f.At.Seconds())
			default:
				return failuref("FAILED at %v", err)
			}
		},
	}
	cmd.Flags().BoolVar(&quiet, "quiet", false, "print only the closing summary line")
	return cmd
}
