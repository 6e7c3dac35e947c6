package apiclient

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNewChecksBeforeDialling: a bad URL or TLS option is refused by New,
// which dials nothing.
func TestNewChecksBeforeDialling(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		base string
		tls  TLS
		want string // in the error; empty: no error
	}{
		{"http://127.0.0.1:8081", TLS{}, ""},
		{"https://gw.example:8081/prefix/", TLS{ServerName: "gw.example"}, ""},
		{"127.0.0.1:8081", TLS{}, "want http:// or https://"},
		{"ftp://127.0.0.1", TLS{}, "want http:// or https://"},
		{"http://", TLS{}, "no host"},
		{"http://127.0.0.1:8081/?x=1", TLS{}, "no query"},
		{"http://127.0.0.1:8081", TLS{CAFile: notPEM}, "not https"},
		{"https://127.0.0.1:8081", TLS{CAFile: filepath.Join(dir, "missing.pem")}, "missing.pem"},
		{"https://127.0.0.1:8081", TLS{CAFile: notPEM}, "no PEM certificate"},
		{"https://127.0.0.1:8081", TLS{CertFile: notPEM}, "both"},
		{"https://127.0.0.1:8081", TLS{CertFile: notPEM, KeyFile: notPEM}, "client certificate"},
	} {
		_, err := New(tc.base, "", tc.tls, time.Second)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("New(%q, %+v): %v", tc.base, tc.tls, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("New(%q, %+v) = %v, want an error with %q", tc.base, tc.tls, err, tc.want)
		}
	}
}

// TestLease: each operation's method, path, body and key, and the answers
// read back, a problem decoded.
func TestLease(t *testing.T) {
	type call struct {
		method, path, auth string
		body               map[string]any
	}
	calls := make(chan call, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := call{method: r.Method, path: r.URL.EscapedPath(), auth: r.Header.Get("Authorization")}
		if b, _ := io.ReadAll(r.Body); len(b) > 0 {
			if r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &c.body) != nil {
				t.Errorf("%s %s: body %q, Content-Type %q", r.Method, r.URL, b, r.Header.Get("Content-Type"))
			}
		}
		calls <- c
		if strings.HasSuffix(r.URL.Path, "/acquire") {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"type":"urn:fencegw:problem:lease-held","status":409,"detail":"held by node-a","holder":"node-a","current_epoch":3}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"name":"a/b","holder":"node-a","epoch":3,"token":"t"}`)
	}))
	defer srv.Close()
	c, err := New(srv.URL+"/", "k", TLS{}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	r := LeaseRequest{Holder: "node-a", TTL: 1500 * time.Millisecond, Epoch: 3}
	for _, tc := range []struct {
		op   string
		want call
	}{
		{OpAcquire, call{"POST", "/v1/leases/a%2Fb/acquire", "Bearer k", map[string]any{"holder": "node-a", "ttl_seconds": 1.5}}},
		{OpRenew, call{"POST", "/v1/leases/a%2Fb/renew", "Bearer k", map[string]any{"holder": "node-a", "epoch": 3.0}}},
		{OpRelease, call{"POST", "/v1/leases/a%2Fb/release", "Bearer k", map[string]any{"holder": "node-a", "epoch": 3.0}}},
		{OpGet, call{"GET", "/v1/leases/a%2Fb", "Bearer k", nil}},
	} {
		a, err := c.Lease(ctx, tc.op, "a/b", r)
		if err != nil {
			t.Fatalf("%s: %v", tc.op, err)
		}
		got := <-calls
		if got.method != tc.want.method || got.path != tc.want.path || got.auth != tc.want.auth ||
			len(got.body) != len(tc.want.body) {
			t.Errorf("%s sent %+v, want %+v", tc.op, got, tc.want)
		}
		for k, v := range tc.want.body {
			if got.body[k] != v {
				t.Errorf("%s: body[%s] = %v, want %v", tc.op, k, got.body[k], v)
			}
		}
		if tc.op == OpAcquire {
			if a.Status != http.StatusConflict || a.Problem == nil || a.Problem.Holder != "node-a" ||
				a.Problem.CurrentEpoch == nil || *a.Problem.CurrentEpoch != 3 {
				t.Errorf("acquire: answer %+v, problem %+v", a, a.Problem)
			}
			if s := a.String(); s != "409 Conflict: held by node-a" {
				t.Errorf("acquire: String() = %q", s)
			}
			if _, err := c.LeaseState(ctx, OpAcquire, "a/b", r); err == nil || !strings.Contains(err.Error(), "409") {
				t.Errorf("LeaseState of a 409: %v", err)
			}
			<-calls
			continue
		}
		if a.Status != http.StatusOK || a.Problem != nil {
			t.Errorf("%s: answer %+v", tc.op, a)
		}
	}
	l, err := c.LeaseState(ctx, OpRenew, "a/b", r)
	<-calls
	if err != nil || l.Epoch != 3 || l.Token != "t" {
		t.Errorf("LeaseState(renew) = %+v, %v", l, err)
	}
	if !IsLeaseOp(OpGet) || IsLeaseOp("steal") {
		t.Error("IsLeaseOp")
	}
	if _, err := c.Lease(ctx, "steal", "a/b", r); err == nil {
		t.Error("an unknown operation was sent")
	}
}

// TestTLS: an https control API is trusted through the CA file and the
// server name given, and not without them.
func TestTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ready"}`)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pemCert(srv.Certificate().Raw), 0o600); err != nil {
		t.Fatal(err)
	}
	// The server's certificate names 127.0.0.1 and example.com.
	for _, tc := range []struct {
		tls TLS
		ok  bool
	}{
		{TLS{}, false},
		{TLS{CAFile: ca}, true},
		{TLS{CAFile: ca, ServerName: "example.com"}, true},
		{TLS{CAFile: ca, ServerName: "elsewhere.test"}, false},
	} {
		c, err := New(srv.URL, "", tc.tls, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Status string }
		err = c.GetJSON(context.Background(), "/readyz", &out)
		c.Close()
		if tc.ok != (err == nil) || (tc.ok && out.Status != "ready") {
			t.Errorf("%+v: %v, %+v", tc.tls, err, out)
		}
	}
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
