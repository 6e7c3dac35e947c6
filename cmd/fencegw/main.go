// Command fencegw is a fencing gateway: a reverse proxy that refuses writes
// carrying a stale fencing epoch before they reach the resource behind it.
//
// Usage:
//
//	fencegw serve [--config FILE] [--listen ADDR] [--api-listen ADDR] [--store STORE] [--route PREFIX=UPSTREAM]...
//	fencegw lease acquire|renew|release|get NAME [flags]
//	fencegw token inspect TOKEN [flags]
//	fencegw probe [--api URL] [--path /readyz] [--timeout 3s] [TLS flags]
//	fencegw keys generate|api-key [flags]
//	fencegw config validate FILE | fencegw config example
//	fencegw echo [--listen ADDR]
//	fencegw demo [--quiet]
//	fencegw version
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `fencegw: a fencing gateway

Usage:
  fencegw serve [flags]   run the gateway (fencegw serve -h for flags)
  fencegw lease OP NAME   acquire, renew, release or get a lease
  fencegw token inspect   decode and verify a token
  fencegw probe [flags]   exit 0 if the gateway's /readyz answers 200 (a health check)
  fencegw keys generate   make a signing key; keys api-key: a control API key
  fencegw config validate FILE | config example
  fencegw echo [flags]    run a sample upstream that echoes what reaches it
  fencegw demo [--quiet]  tell a stale leader's story in-process, no set-up
  fencegw version         print the version
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stderr)
	case "config":
		return configCmd(args[1:], stdout, stderr)
	case "lease":
		return leaseCmd(ctx, args[1:], stdout, stderr)
	case "token":
		return tokenCmd(ctx, args[1:], stdout, stderr)
	case "probe":
		return probe(ctx, args[1:], stdout, stderr)
	case "keys":
		return keysCmd(args[1:], stdout, stderr)
	case "echo":
		return echo(ctx, args[1:], stdout, stderr)
	case "demo":
		return demoCmd(ctx, args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "fencegw", version)
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "fencegw: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
