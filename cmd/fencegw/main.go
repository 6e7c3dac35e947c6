// Command fencegw is a fencing gateway: a reverse proxy that refuses writes
// carrying a stale fencing epoch before they reach the resource behind it.
//
// Usage:
//
//	fencegw serve [--config FILE] [--listen ADDR] [--api-listen ADDR] [--store STORE] [--route PREFIX=UPSTREAM]...
//	fencegw lease acquire|renew|release|get|watch NAME [flags]
//	fencegw token inspect TOKEN [flags]
//	fencegw probe [--api URL] [--path /readyz] [--timeout 3s] [TLS flags]
//	fencegw keys generate|api-key [flags]
//	fencegw config validate FILE | fencegw config example
//	fencegw echo [--listen ADDR]
//	fencegw demo [--quiet]
//	fencegw version | fencegw --version
//	fencegw completion bash|zsh|fish|powershell
//
// Every command takes -h/--help; docs/cli.md has the exit codes.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stderr)
	root.SetArgs(legacyFlags(args, longFlags(root)))
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		format, _ := cmd.Flags().GetString("log-format")
		reportError(stderr, cmd, err, format)
	}
	return exitCodeOf(err)
}

// newRootCmd builds the command tree. stderr decides, for serve, whether
// fatal errors default to text (a terminal) or JSON.
func newRootCmd(stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "fencegw",
		Short: "a fencing gateway",
		Long: "fencegw: a fencing gateway, an HTTP reverse proxy that refuses writes carrying a stale\n" +
			"fencing epoch before they reach the resource behind it.",
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
		// A typo names the closest command; the root's distance is used for
		// flags too (suggestFlag).
		SuggestionsMinimumDistance: 2,
	}
	root.SetVersionTemplate("fencegw {{.Version}}\n")
	root.PersistentFlags().String("log-format", "text",
		"`format` of an error on stderr: text (one line) or json (a log line); serve has its own, see serve --help")
	root.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions(
		[]cobra.Completion{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	root.AddCommand(
		newServeCmd(stderr),
		newLeaseCmd(),
		newTokenCmd(),
		newProbeCmd(),
		newKeysCmd(),
		newConfigCmd(),
		newEchoCmd(),
		newDemoCmd(),
		newVersionCmd(),
	)
	root.SetHelpCommand(newHelpCmd())
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	wireCommands(root)
	return root
}

// wireCommands sets what every command shares: bad flags are bad usage, --log-format
// is checked, and a command that only groups others refuses to run without one.
func wireCommands(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(flagError)
	cmd.SuggestionsMinimumDistance = cmd.Root().SuggestionsMinimumDistance
	if cmd.HasSubCommands() && cmd.Run == nil && cmd.RunE == nil {
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = groupRun
	}
	if cmd.Args == nil {
		cmd.Args = noArgs
	}
	if cmd.PreRunE == nil {
		cmd.PreRunE = checkLogFormat
	}
	for _, c := range cmd.Commands() {
		wireCommands(c)
	}
}

// checkLogFormat refuses a --log-format other than text or json.
func checkLogFormat(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags().Lookup("log-format")
	if f == nil || f.Value.String() == "text" || f.Value.String() == "json" || (f.Value.String() == "" && !f.Changed) {
		return nil
	}
	return badUsage(cmd, fmt.Errorf("--log-format %q: want text or json", f.Value.String()))
}

// newHelpCmd is `fencegw help [command]`: the command's help on stdout,
// and bad usage for a command that does not exist.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Args:  cobra.ArbitraryArgs,
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, s := range cmd.Commands() {
				if s.IsAvailableCommand() {
					out = append(out, cobra.CompletionWithDesc(s.Name(), s.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				if cmd == nil {
					cmd = c.Root()
				}
				topic := strings.Join(args, " ")
				if len(rest) > 0 {
					topic = rest[0]
				}
				return unknownCommand(cmd, topic)
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}

// newVersionCmd is `fencegw version`, as `fencegw --version`.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version (and the VCS commit it was built from, when known)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "fencegw %s\n", versionString())
			return nil
		},
	}
}
