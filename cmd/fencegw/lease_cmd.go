package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

const leaseUsage = `Usage:
  fencegw lease acquire NAME --holder H [--ttl 15s]
  fencegw lease renew   NAME --holder H --epoch E
  fencegw lease release NAME --holder H --epoch E
  fencegw lease get     NAME

Flags common to all: --api URL (default $FENCEGW_API or http://127.0.0.1:8081),
--api-key KEY (default $FENCEGW_API_KEY). The answer's JSON is printed on
stdout; a refusal's problem document on stderr, with exit status 1.
`

// leaseCmd calls the control API's lease endpoints.
func leaseCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) < 2 || strings.HasPrefix(args[1], "-") {
		fmt.Fprint(stderr, leaseUsage)
		return 2
	}
	op, name := args[0], args[1]
	fs := flag.NewFlagSet("fencegw lease "+op, flag.ContinueOnError)
	fs.SetOutput(stderr)
	api := fs.String("api", envOr("FENCEGW_API", "http://127.0.0.1:8081"), "control API base `URL`")
	key := fs.String("api-key", os.Getenv("FENCEGW_API_KEY"), "API `key`")
	holder := fs.String("holder", "", "the lease holder's `name`")
	ttl := fs.Duration("ttl", 15*time.Second, "lease `duration` (acquire)")
	epoch := fs.Int64("epoch", 0, "the `epoch` held (renew, release)")
	if err := fs.Parse(args[2:]); err != nil {
		return 2
	}
	var (
		method = http.MethodPost
		path   = "/v1/leases/" + url.PathEscape(name) + "/" + op
		body   any
	)
	switch op {
	case "acquire":
		body = map[string]any{"holder": *holder, "ttl_seconds": ttl.Seconds()}
	case "renew", "release":
		body = map[string]any{"holder": *holder, "epoch": *epoch}
	case "get":
		method, path = http.MethodGet, "/v1/leases/"+url.PathEscape(name)
	default:
		fmt.Fprintf(stderr, "fencegw lease: unknown operation %q\n\n%s", op, leaseUsage)
		return 2
	}
	status, out, err := callAPI(ctx, method, strings.TrimRight(*api, "/")+path, *key, body)
	if err != nil {
		fmt.Fprintf(stderr, "fencegw lease %s: %v\n", op, err)
		return 1
	}
	if status >= 300 {
		fmt.Fprintf(stderr, "fencegw lease %s: %d %s\n%s\n", op, status, http.StatusText(status), bytes.TrimSpace(out))
		return 1
	}
	if len(out) == 0 {
		fmt.Fprintf(stdout, "{\"status\":%d}\n", status)
		return 0
	}
	stdout.Write(out)
	return 0
}

// callAPI sends one JSON request and returns the status and body.
func callAPI(ctx context.Context, method, target, key string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, target, r)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, errors.Join(errors.New("read answer"), err)
	}
	return resp.StatusCode, out, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
