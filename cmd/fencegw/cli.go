package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fencegw/fencegw/internal/suggest"
)

// The exit codes of every command (docs/cli.md, "Exit codes").
const (
	exitOK      = 0 // done; --help, help and version
	exitFailure = 1 // a runtime failure: unreachable API, refused lease, failed probe, bad file…
	exitUsage   = 2 // bad usage: unknown command or flag, bad flag value, missing or extra argument
)

// usageExitAnnotation, on a command, replaces exitUsage for its bad usage:
// probe exits 1 on every failure, since container runtimes reserve the
// other exit codes of a health check.
const usageExitAnnotation = "fencegw/usage-exit"

// exitError is an error with the exit code it ends the process with.
// printed says the command already wrote its own report on stderr.
type exitError struct {
	code    int
	err     error
	printed bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr is bad usage: exit 2, with a hint to --help.
func usageErr(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// failure is a runtime failure: exit 1.
func failure(err error) error { return &exitError{code: exitFailure, err: err} }

// failuref is failure with a formatted message.
func failuref(format string, a ...any) error { return failure(fmt.Errorf(format, a...)) }

// reported is a runtime failure that the command already told on stderr
// or stdout (a refusal's problem document, NOT VERIFIED): exit 1, nothing more.
func reported(err error) error { return &exitError{code: exitFailure, err: err, printed: true} }

// exitCodeOf maps the error a command returned to the process exit code.
// Errors that are not exitErrors come from cobra's own checks of commands
// and arguments: bad usage.
func exitCodeOf(err error) int {
	var e *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &e):
		return e.code
	default:
		return exitUsage
	}
}

// reportError writes err for the command cmd on stderr: one line
// "fencegw CMD: what failed" in text, or one JSON log line; bad usage ends
// with a hint to the command's --help.
func reportError(stderr io.Writer, cmd *cobra.Command, err error, format string) {
	var e *exitError
	if errors.As(err, &e) && e.printed {
		return
	}
	path := "fencegw"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	code := exitCodeOf(err)
	msg := oneLine(err.Error())
	if e == nil || code == exitUsage || isUsage(err) {
		msg += fmt.Sprintf(" (see '%s --help')", path)
	}
	if format == "json" {
		slog.New(slog.NewJSONHandler(stderr, nil)).Error(msg, "command", path, "exit_code", code)
		return
	}
	fmt.Fprintf(stderr, "%s: %s\n", path, msg)
}

// isUsage reports whether err is bad usage, whatever exit code the command
// gives it.
func isUsage(err error) bool {
	var u *usageError
	return errors.As(err, &u)
}

// usageError marks bad usage on a command with its own usage exit code.
type usageError struct{ error }

func (u *usageError) Unwrap() error { return u.error }

// badUsage returns err as bad usage of cmd: exit 2, or the command's
// usageExitAnnotation code.
func badUsage(cmd *cobra.Command, err error) error {
	code := exitUsage
	if c := cmd.Annotations[usageExitAnnotation]; c == "1" {
		code = exitFailure
	}
	return &exitError{code: code, err: &usageError{err}}
}

// flagError is every command's cobra FlagErrorFunc: a bad or unknown flag
// is bad usage, and an unknown flag close to a known one names it.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if s := suggestFlag(cmd, name); s != "" {
			msg += fmt.Sprintf("; did you mean --%s?", s)
		}
	}
	return badUsage(cmd, errors.New(msg))
}

// suggestFlag returns the flag of cmd closest to name, if within the root's
// SuggestionsMinimumDistance (or a prefix of it).
func suggestFlag(cmd *cobra.Command, name string) string {
	best, bestD := "", cmd.Root().SuggestionsMinimumDistance+1
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := suggest.Distance(name, f.Name)
		if strings.HasPrefix(f.Name, name) && d > 0 {
			d = min(d, cmd.Root().SuggestionsMinimumDistance)
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// groupRun is the RunE of a command that only groups subcommands (lease,
// keys, …): without one it prints its usage on stderr, and an unknown one
// is bad usage naming the closest.
func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		cmd.SetOut(cmd.ErrOrStderr())
		cmd.Usage()
		return badUsage(cmd, fmt.Errorf("missing command: one of %s", strings.Join(subcommandNames(cmd), ", ")))
	}
	return unknownCommand(cmd, args[0])
}

// unknownCommand is bad usage: name is no subcommand of cmd.
func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	return badUsage(cmd, errors.New(msg))
}

func subcommandNames(cmd *cobra.Command) []string {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return names
}

// exactArgs is cobra.ExactArgs as bad usage naming what is missing or extra.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < n:
			return badUsage(cmd, fmt.Errorf("missing %s", what))
		case len(args) > n:
			return badUsage(cmd, fmt.Errorf("unexpected argument %q", args[n]))
		}
		return nil
	}
}

// noArgs is cobra.NoArgs as bad usage.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return badUsage(cmd, fmt.Errorf("unexpected argument %q", args[0]))
	}
	return nil
}

// legacyFlags rewrites the single-dash long flags that Go's flag package
// took (-holder H, -epoch=3) to the double-dash form, for the names in
// long; "--" ends the rewriting.
func legacyFlags(args []string, long map[string]bool) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(name) > 1 && long[name] {
			out[i] = "-" + a
		}
	}
	return out
}

// longFlags returns the names of every long flag of cmd and its
// subcommands.
func longFlags(cmd *cobra.Command) map[string]bool {
	names := map[string]bool{"help": true, "version": true}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(cmd)
	return names
}

// stderrIsTerminal reports whether stderr is a terminal (a character
// device), where errors read better as text than as JSON.
func stderrIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// oneLine folds every run of white space in s into one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
