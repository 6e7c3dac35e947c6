package telemetry

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// testResource is the resource part of every exporting test's environment.
func testEnv(vars map[string]string) map[string]string {
	vars["OTEL_SERVICE_NAME"] = "fencegw-test"
	vars["OTEL_RESOURCE_ATTRIBUTES"] = "deployment.environment=test,service.name=overridden-by-OTEL_SERVICE_NAME"
	return vars
}

func TestOTLPHTTP(t *testing.T) {
	t.Parallel()

	t.Run("protobuf", func(t *testing.T) {
		t.Parallel()
		rec := &traceReceiver{}
		srv := httptest.NewServer(rec)
		defer srv.Close()

		tel := setup(t, testEnv(map[string]string{
			"OTEL_TRACES_EXPORTER":        "otlp",
			"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL,
			"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		}))
		if !tel.Exporting {
			t.Error("Exporting = false, want true")
		}
		sc := emitSpan(context.Background(), tel)
		shutdown(t, tel)

		checkStaleSpan(t, rec, sc)
		reqs := rec.requests()
		if reqs[0].path != "/v1/traces" || reqs[0].contentEncoding != "" {
			t.Errorf("request to %s (Content-Encoding %q), want /v1/traces uncompressed", reqs[0].path, reqs[0].contentEncoding)
		}
	})

	t.Run("traces endpoint, headers, gzip, implied otlp", func(t *testing.T) {
		t.Parallel()
		rec := &traceReceiver{}
		srv := httptest.NewServer(rec)
		defer srv.Close()

		tel := setup(t, testEnv(map[string]string{
			// No OTEL_TRACES_EXPORTER and no protocol: an endpoint implies
			// otlp, http/protobuf.
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv.URL + "/custom/traces",
			"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://127.0.0.1:1", // loses to the traces endpoint
			"OTEL_EXPORTER_OTLP_HEADERS":         "x-fencegw-test=a%20b, x-other = c",
			"OTEL_EXPORTER_OTLP_COMPRESSION":     "gzip",
		}))
		if !tel.Exporting {
			t.Error("Exporting = false, want true")
		}
		sc := emitSpan(context.Background(), tel)
		shutdown(t, tel)

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
		t.Parallel()
		rec := &traceReceiver{}
		srv := httptest.NewServer(rec)
		defer srv.Close()

		tel := setup(t, testEnv(map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT":        srv.URL,
			"OTEL_EXPORTER_OTLP_PROTOCOL":        "grpc", // loses to the traces protocol
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json",
		}))
		sc := emitSpan(context.Background(), tel)
		shutdown(t, tel)

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
		t.Parallel()
		rec := &traceReceiver{}
		srv := httptest.NewTLSServer(rec)
		defer srv.Close()
		ca := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
			t.Fatal(err)
		}

		tel := setup(t, testEnv(map[string]string{
			"OTEL_TRACES_EXPORTER":           "otlp",
			"OTEL_EXPORTER_OTLP_ENDPOINT":    srv.URL + "/otlp/",
			"OTEL_EXPORTER_OTLP_CERTIFICATE": ca,
		}))
		sc := emitSpan(context.Background(), tel)
		shutdown(t, tel)

		checkStaleSpan(t, rec, sc)
		if p := rec.requests()[0].path; p != "/otlp/v1/traces" {
			t.Errorf("request to %s, want /otlp/v1/traces", p)
		}
	})
}

// TestOTLPGRPC exports to an in-process gRPC TraceService.
func TestOTLPGRPC(t *testing.T) {
	t.Parallel()
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

	tel := setup(t, testEnv(map[string]string{
		"OTEL_TRACES_EXPORTER":        "otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + lis.Addr().String(), // http: plaintext
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_EXPORTER_OTLP_HEADERS":  "x-fencegw-test=grpc",
	}))
	if !tel.Exporting {
		t.Error("Exporting = false, want true")
	}
	sc := emitSpan(context.Background(), tel)
	shutdown(t, tel)

	checkStaleSpan(t, rec, sc)
	if h := rec.requests()[0].header["x-fencegw-test"]; h != "grpc" {
		t.Errorf("metadata x-fencegw-test = %q, want grpc", h)
	}
}

// TestConsoleAndOTLP exports to standard output and OTLP at once. It swaps
// os.Stdout, so it must not run in parallel.
func TestConsoleAndOTLP(t *testing.T) {
	rec := &traceReceiver{}
	srv := httptest.NewServer(rec)
	defer srv.Close()

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	stdout := os.Stdout
	os.Stdout = w // the console exporter takes os.Stdout when built
	tel, err := Setup(context.Background(), Options{Getenv: getenv(testEnv(map[string]string{
		"OTEL_TRACES_EXPORTER":        " Console , otlp,console",
		"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL,
	})), ServiceVersion: "v0.0.0-test"})
	os.Stdout = stdout
	if err != nil {
		w.Close()
		t.Fatalf("Setup: %v", err)
	}
	out := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	if !tel.Exporting {
		t.Error("Exporting = false, want true")
	}
	sc := emitSpan(context.Background(), tel)
	shutdown(t, tel)
	w.Close()

	checkStaleSpan(t, rec, sc)
	printed := <-out
	if strings.Count(printed, sc.TraceID().String()) == 0 || strings.Count(printed, `"Name":"POST /email/"`) != 1 {
		t.Errorf("console output does not hold the span once:\n%s", printed)
	}
}

var _ http.Handler = (*traceReceiver)(nil)
