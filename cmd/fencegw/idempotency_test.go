package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
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
