package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

// echoed is what the sample upstream answers and prints for each request.
type echoed struct {
	Method          string `json:"method"`
	Path            string `json:"path"`
	FencingEpoch    string `json:"fencing_epoch,omitempty"`
	FencingResource string `json:"fencing_resource,omitempty"`
	BodyBytes       int64  `json:"body_bytes"`
}

func newEchoCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "echo",
		Short: "Run a sample upstream that echoes what reaches it",
		Long: "Runs a sample upstream: it answers every request with a JSON summary of what reached it\n" +
			"(method, path, Fencing-Epoch and Fencing-Resource headers, body size) and prints the same line on stdout.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return echo(cmd.Context(), listen, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:9000", "listen `address`")
	return cmd
}

// echo runs a sample upstream: it answers every request with a JSON summary
// of what reached it, and prints the same line to stdout.
func echo(ctx context.Context, listen string, stdout, stderr io.Writer) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return failure(err)
	}
	var mu sync.Mutex
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		e := echoed{Method: r.Method, Path: r.URL.Path, FencingEpoch: r.Header.Get("Fencing-Epoch"),
			FencingResource: r.Header.Get("Fencing-Resource"), BodyBytes: n}
		line, _ := json.Marshal(e)
		mu.Lock()
		fmt.Fprintf(stdout, "%s\n", line)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(append(line, '\n'))
	})}
	fmt.Fprintf(stderr, "fencegw echo listening on %s\n", ln.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return failure(err)
	}
	return nil
}
