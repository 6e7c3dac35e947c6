package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestIdempotencySurvivesSIGKILL: a write forwarded with an Idempotency-Key
// is not forwarded again after the gateway is killed and restarted; its
// retry gets the kept answer, marked replayed.
func TestIdempotencySurvivesSIGKILL(t *testing.T) {
	var sent atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		sent.Add(1)
		w.Header().Set("X-Message-Id", "m-1001")
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, `{"queued":true}`)
	}))
	defer up.Close()
	db := filepath.Join(t.TempDir(), "s.db")
	send := func(p *proc) (int, string, string) {
		req, _ := http.NewRequest(http.MethodPost, p.proxy+"/w/send", strings.NewReader("invoice 1001"))
		req.Header.Set("Fencing-Token", "3")
		req.Header.Set("Fencing-Resource", "mailer")
		req.Header.Set("Idempotency-Key", `"invoice-1001"`)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header.Get("Idempotent-Replayed") + "/" + resp.Header.Get("X-Message-Id")
	}
	p := start(t, "--store", db, "--route", "/w/="+up.URL)
	if status, body, _ := send(p); status != http.StatusAccepted || body != `{"queued":true}` {
		t.Fatalf("first send = %d %s", status, body)
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	p2 := start(t, "--store", db, "--route", "/w/="+up.URL)
	status, body, h := send(p2)
	if status != http.StatusAccepted || body != `{"queued":true}` || h != "true/m-1001" || sent.Load() != 1 {
		t.Fatalf("retry after SIGKILL and restart = %d %s (replayed/id %s), upstream sends %d; want the kept answer, sent once",
			status, body, h, sent.Load())
	}
}

// TestIdempotencyReplicaDiesMidWrite: a gateway killed while its keyed
// write is at the upstream leaves the key in flight; after the longest an
// exchange can last, retries get idempotency-not-replayable. The write is
// never forwarded twice.
func TestIdempotencyReplicaDiesMidWrite(t *testing.T) {
	var sent atomic.Int32
	arrived, hold := make(chan struct{}, 1), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		sent.Add(1)
		arrived <- struct{}{}
		<-hold
	}))
	defer up.Close()
	defer close(hold) // before up.Close, which waits for the handler
	cfg := writeFile(t, t.TempDir(), "c.yaml", []byte("upstream_timeout: 1s\nstore_timeout: 1s\nroutes:\n  - prefix: /w/\n    upstream: "+up.URL+"\n    tokens: raw\n    resource: mailer\n"))
	db := filepath.Join(t.TempDir(), "s.db")
	send := func(p *proc) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, p.proxy+"/w/send", strings.NewReader("invoice 1002"))
		req.Header.Set("Fencing-Token", "1")
		req.Header.Set("Idempotency-Key", "invoice-1002")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var problem struct {
			Type string `json:"type"`
		}
		b, _ := io.ReadAll(resp.Body)
		json.Unmarshal(b, &problem)
		return resp.StatusCode, problem.Type
	}
	p := start(t, "--config", cfg, "--store", db)
	go send(p)
	<-arrived
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	p2 := start(t, "--config", cfg, "--store", db)
	if status, typ := send(p2); status != http.StatusConflict || typ != "urn:fencegw:problem:idempotency-in-flight" {
		t.Fatalf("retry right after the replica died = %d %s, want 409 in flight", status, typ)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		status, typ := send(p2)
		if status == http.StatusConflict && typ == "urn:fencegw:problem:idempotency-not-replayable" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retry = %d %s 20s after the replica died, want 409 not-replayable", status, typ)
		}
	}
	if n := sent.Load(); n != 1 {
		t.Fatalf("the upstream got the write %d times, want once", n)
	}
}

// TestIdempotencyTTLBelowUpstreamTimeoutRefused: `config validate` and
// `serve` refuse idempotency.ttl shorter than upstream_timeout, naming both
// keys and their values; serve refuses before it opens the store.
func TestIdempotencyTTLBelowUpstreamTimeoutRefused(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", []byte("upstream_timeout: 3m\nidempotency:\n  ttl: 1m\nroutes:\n  - prefix: /w/\n    upstream: http://127.0.0.1:9\n"))
	want := "idempotency.ttl: must be at least upstream_timeout (3m0s), got 1m0s"
	if _, stderr, code := runCLI(t, "config", "validate", cfg); code != 1 || !strings.Contains(stderr, want) {
		t.Fatalf("config validate = exit %d %s, want 1 and %q", code, stderr, want)
	}
	proxyLn, apiLn := holdPort(t), holdPort(t)
	store := filepath.Join(dir, "s.db")
	_, stderr, code := runCLI(t, "serve", "--config", cfg, "--store", store,
		"--listen", proxyLn.Addr().String(), "--api-listen", apiLn.Addr().String())
	if code != 2 || !strings.Contains(stderr, want) {
		t.Fatalf("serve = exit %d %s, want 2 and %q", code, stderr, want)
	}
	if _, err := os.Stat(store); err == nil {
		t.Fatal("serve created the store before refusing")
	}
}
