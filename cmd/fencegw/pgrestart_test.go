package main

import (
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testpg"
)

// TestPostgresRestartThroughTheBinary restarts PostgreSQL under an idle
// gateway process: its next write at the cached epoch is admitted (the
// broken pooled connections are replaced, not turned into 503s). While
// PostgreSQL is down the write is refused with 503, nothing reaches the
// upstream, and the log line of the 503 carries the cause the client is
// never shown.
func TestPostgresRestartThroughTheBinary(t *testing.T) {
	cl := testpg.Require(t)
	up := newRecorder(t, 201)
	p := start(t, "--store", cl.NewDatabase(t), "--route", "/w/="+up.srv.URL, "--log-format", "json")
	if got := post(t, p.proxy+"/w/x", "3", "mail"); got != 201 {
		t.Fatalf("first write = %d, want 201", got)
	}
	if err := cl.Restart(); err != nil {
		t.Fatalf("restart postgres: %v", err)
	}
	if got := post(t, p.proxy+"/w/x", "3", "mail"); got != 201 {
		t.Fatalf("write at the cached epoch after a restart = %d, want 201\n%s", got, p.stderr.String())
	}
	if err := cl.Stop(); err != nil {
		t.Fatalf("stop postgres: %v", err)
	}
	before := len(up.lines())
	if got := post(t, p.proxy+"/w/x", "4", "mail"); got != 503 {
		t.Fatalf("write while postgres is down = %d, want 503", got)
	}
	if n := len(up.lines()); n != before {
		t.Fatalf("the upstream received %d writes while the store was down", n-before)
	}
	// The line is written before the answer, but reaches the test through
	// a pipe: wait for it.
	var logged string
	for deadline := time.Now().Add(10 * time.Second); logged == "" && time.Now().Before(deadline); {
		for _, l := range strings.Split(p.stderr.String(), "\n") {
			if strings.Contains(l, `"status":503`) {
				logged = l
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logged, `"error":"`) || !strings.Contains(logged, "advance") {
		t.Fatalf("the 503 is logged without its cause: %q\n%s", logged, p.stderr.String())
	}
	if err := cl.Restart(); err != nil {
		t.Fatalf("restart postgres: %v", err)
	}
	if got := post(t, p.proxy+"/w/x", "4", "mail"); got != 201 {
		t.Fatalf("write after postgres is back = %d, want 201", got)
	}
}
