package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestLeaderTransportThroughProcesses: issue 8, item 12, with the fencegw
// binary and a leader process writing through the Go client's Transport.
// The upstream answers the leader's first writes with its own 412s (plain,
// and a problem of its own type), then redirects one to another server and
// one to the gateway again: the leader keeps leading, the other server never
// sees Fencing-Token, and the same-origin redirect is admitted at the
// leader's epoch. Then node-b is granted the lease behind node-a's back:
// the gateway's stale-epoch 412 ends node-a's term.
func TestLeaderTransportThroughProcesses(t *testing.T) {
	var (
		mu     sync.Mutex
		sends  int      // writes that reached /w/send
		landed []string // Fencing-Epoch of those that reached /w/landed
	)
	other := newRecorder(t, http.StatusCreated)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/w/landed" {
			landed = append(landed, r.Header.Get("Fencing-Epoch"))
			w.WriteHeader(http.StatusCreated)
			return
		}
		sends++
		switch sends {
		case 1:
			w.WriteHeader(http.StatusPreconditionFailed)
			io.WriteString(w, "If-Match: no such version")
		case 2:
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusPreconditionFailed)
			io.WriteString(w, `{"type":"urn:example:etag-mismatch","status":412}`)
		case 3:
			http.Redirect(w, r, other.srv.URL+"/in", http.StatusTemporaryRedirect)
		case 4:
			http.Redirect(w, r, "/w/landed", http.StatusTemporaryRedirect)
		default:
			w.WriteHeader(http.StatusCreated)
		}
	}))
	defer up.Close()
	gw := start(t, "--store", filepath.Join(t.TempDir(), "s.db"), "--signed-route", "/w/="+up.URL)

	// Renewals are 10 s apart: only the Transport can end the term here.
	a := startLeader(t, gw.api, gw.proxy+"/w/send", "node-a", 100*time.Millisecond,
		"--transport", "--lease-duration", "30s", "--renew-deadline", "20s",
		"--no-watch") // the gateway's 412, not the lease watch, must end the term
	a.await(t, "node-a leading at epoch 1", is("leading", 1))
	statuses := func() []float64 {
		var s []float64
		for _, ev := range a.snapshot() {
			if ev["event"] == "write" {
				s = append(s, ev["status"].(float64))
			}
		}
		return s
	}
	a.await(t, "node-a's fifth write", func(map[string]any) bool { return len(statuses()) >= 5 })
	if got, want := fmt.Sprint(statuses()[:5]), "[412 412 201 201 201]"; got != want {
		t.Fatalf("node-a's first writes answered %s, want %s", got, want)
	}
	for _, ev := range a.snapshot() {
		if ev["event"] == "stopped" {
			t.Fatalf("node-a stopped leading on the upstream's own 412: %v", ev)
		}
	}
	if atOther := other.values("Fencing-Token"); len(atOther) != 1 || atOther[0] != "" {
		t.Errorf("the other server received Fencing-Token %q, want one write without it", atOther)
	}
	mu.Lock()
	if len(landed) != 1 || landed[0] != "1" {
		t.Errorf("the same-origin redirect reached the upstream with Fencing-Epoch %q, want 1", landed)
	}
	mu.Unlock()

	// node-b takes the lease behind node-a's back.
	if r := controlCall(t, "POST", gw.api+"/v1/leases/invoice-sweeper/release", "", `{"holder":"node-a","epoch":1}`); r.status != http.StatusNoContent {
		t.Fatalf("release: %d %s", r.status, r.raw)
	}
	if r := controlCall(t, "POST", gw.api+"/v1/leases/invoice-sweeper/acquire", "", `{"holder":"node-b","ttl_seconds":60}`); r.status != http.StatusOK {
		t.Fatalf("acquire by node-b: %d %s", r.status, r.raw)
	}
	stopped := a.await(t, "node-a stepping down", is("stopped", 1))
	if stopped["fenced"] != true {
		t.Fatalf("node-a stopped for %v, want the gateway's stale-epoch 412", stopped["reason"])
	}
	a.await(t, "node-a's write refused by the gateway", func(map[string]any) bool {
		n := 0
		for _, s := range statuses() {
			if s == http.StatusPreconditionFailed {
				n++
			}
		}
		return n == 3
	})
	// Not leading, the Transport sends nothing more.
	mu.Lock()
	before := sends
	mu.Unlock()
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if sends != before {
		t.Fatalf("the upstream received %d writes after node-a stepped down", sends-before)
	}
}
