package telemetry

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// exportSpan sets telemetry up with vars, plus the resource variables of
// every exporting test, as the OTEL_* environment, checks that it exports,
// and emits one span shaped like a refused stale write; it shuts down
// before it returns, which flushes the span to the exporter.
func exportSpan(t *testing.T, vars map[string]string) trace.SpanContext {
	t.Helper()
	vars["OTEL_SERVICE_NAME"] = "fencegw-test"
	vars["OTEL_RESOURCE_ATTRIBUTES"] = "deployment.environment=test,service.name=overridden-by-OTEL_SERVICE_NAME"
	tel := setup(t, vars)
	if !tel.Exporting {
		t.Error("Exporting = false, want true")
	}
	sc := emitSpan(context.Background(), tel)
	shutdown(t, tel)
	return sc
}

func TestOTLPHTTP(t *testing.T) {
	t.Run("protobuf", func(t *testing.T) {
		rec := &traceReceiver{}
		srv := httptest.NewServer(rec)
		defer srv.Close()

		sc := exportSpan(t, map[string]string{
			"OTEL_TRACES_EXPORTER":        "otlp",
			"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL,
			"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		})

		checkStaleSpan(t, rec, sc)
		reqs := rec.requests()
		if reqs[0].path != "/v1/traces" || reqs[0].contentEncoding != "" {
			t.Errorf("request to %s (Content-Encoding %q), want /v1/traces uncompressed", reqs[0].path, reqs[0].contentEncoding)
		}
	})

	t.Run("traces endpoint, headers, gzip, implied otlp", func(t *testing.T) {
		rec := &traceReceiver{}
		srv := httptest.NewServer(rec)
		defer srv.Close()

		sc := exportSpan(t, map[string]string{
			// No OTEL_TRACES_EXPORTER and no protocol: an endpoint implies
			// otlp, http/protobuf.
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv.URL + "/custom/traces",
			"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://127.0.0.1:1", // loses to the traces endpoint
			"OTEL_EXPORTER_OTLP_HEADERS":         "x-fencegw-test=a%20b, x-other = c",
			"OTEL_EXPORTER_OTLP_COMPRESSION":     "gzip",
		})

		checkStaleSpan(t, rec, sc)
		r := rec.requests()[0]
		if r.path != "/custom/traces" || r.contentEncoding != "gzip" {
			t.Errorf("request to %s (Content-Encoding %q), want /custom/traces gzip", r.path, r.contentEncoding)
		}
		if r.header["x-fencegw-test"] != "a b" || r.header["x-other"] != "c" {
			t.Errorf("headers = %v, want x-fencegw-test: a b, x-other: c", r.header)
		}
	})

	t.Run("json", func(t *testing.T) {
		rec := &traceReceiver{}
		srv := httptest.NewServer(rec)
		defer srv.Close()

		sc := exportSpan(t, map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT":        srv.URL,
			"OTEL_EXPORTER_OTLP_PROTOCOL":        "grpc", // loses to the traces protocol
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json",
		})

		reqs := rec.requests()
		if len(reqs) != 1 || reqs[0].contentType != "application/json" {
			t.Fatalf("receiver got %d requests (%+v), want one JSON request", len(reqs), reqs)
		}
		body := strings.ToLower(string(reqs[0].body)) // the exporter writes ids in upper case
		for _, want := range []string{sc.TraceID().String(), "fencegw-test", "fencing.stale_write_rejected"} {
			if !strings.Contains(body, want) {
				t.Errorf("JSON body lacks %q: %s", want, body)
			}
		}
	})

	t.Run("https with CA file and base path", func(t *testing.T) {
		rec := &traceReceiver{}
		srv := httptest.NewTLSServer(rec)
		defer srv.Close()
		ca := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
			t.Fatal(err)
		}

		sc := exportSpan(t, map[string]string{
			"OTEL_TRACES_EXPORTER":           "otlp",
			"OTEL_EXPORTER_OTLP_ENDPOINT":    srv.URL + "/otlp/",
			"OTEL_EXPORTER_OTLP_CERTIFICATE": ca,
		})

		checkStaleSpan(t, rec, sc)
		if p := rec.requests()[0].path; p != "/otlp/v1/traces" {
			t.Errorf("request to %s, want /otlp/v1/traces", p)
		}
	})
}

// TestOTLPGRPC exports to an in-process gRPC TraceService.
func TestOTLPGRPC(t *testing.T) {
	rec := &traceReceiver{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, rec)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() {
		srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()

	sc := exportSpan(t, map[string]string{
		"OTEL_TRACES_EXPORTER":        "otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + lis.Addr().String(), // http: plaintext
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_EXPORTER_OTLP_HEADERS":  "x-fencegw-test=grpc",
	})

	checkStaleSpan(t, rec, sc)
	if h := rec.requests()[0].header["x-fencegw-test"]; h != "grpc" {
		t.Errorf("metadata x-fencegw-test = %q, want grpc", h)
	}
}

// TestConsole exports to standard output. The console exporter writes to
// os.Stdout as it was when its package was initialised, so the test runs
// itself again as a child process with OTEL_TRACES_EXPORTER=console and
// reads the child's standard output.
func TestConsole(t *testing.T) {
	if os.Getenv(consoleChild) != "" {
		sc := exportSpan(t, map[string]string{"OTEL_TRACES_EXPORTER": "console"})
		fmt.Fprintf(os.Stderr, "%s%s\n", consoleChildTrace, sc.TraceID())
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestConsole$", "-test.count=1")
	cmd.Env = append(os.Environ(), consoleChild+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	_, traceID, found := strings.Cut(stderr.String(), consoleChildTrace)
	traceID, _, _ = strings.Cut(traceID, "\n")
	if !found || len(traceID) != 32 {
		t.Fatalf("the child did not report its trace id:\n%s", stderr.String())
	}
	printed := stdout.String()
	if !strings.Contains(printed, traceID) || strings.Count(printed, `"Name":"POST /email/"`) != 1 ||
		!strings.Contains(printed, "fencegw-test") {
		t.Errorf("console output does not hold the span of trace %s once, with its resource:\n%s", traceID, printed)
	}
}

// consoleChild marks TestConsole's child process, which reports its span's
// trace id after consoleChildTrace on standard error.
const (
	consoleChild      = "FENCEGW_TELEMETRY_TEST_CONSOLE_CHILD"
	consoleChildTrace = "console test trace id: "
)

var _ http.Handler = (*traceReceiver)(nil)
