package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// echoed is what the sample upstream answers and prints for each request.
type echoed struct {
	Method          string `json:"method"`
	Path            string `json:"path"`
	FencingEpoch    string `json:"fencing_epoch,omitempty"`
	FencingResource string `json:"fencing_resource,omitempty"`
	BodyBytes       int64  `json:"body_bytes"`
}

// echo runs a sample upstream: it answers every request with a JSON summary
// of what reached it, and prints the same line to stdout.
func echo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fencegw echo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:9000", "listen `address`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "fencegw echo: %v\n", err)
		return 1
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
		fmt.Fprintf(stderr, "fencegw echo: %v\n", err)
		return 1
	}
	return 0
}
