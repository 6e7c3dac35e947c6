package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/tokens"
)

// renewBudget is how long a renewal may take before it counts as failed:
// a leader whose renew deadline is this close would step down. It is a
// correctness condition of the leader, not a speed target.
const renewBudget = time.Second

// TestAuditWorkNeverHoldsFencing: on the embedded store, while the purge
// deletes 60,000 audit entries (audit.history.max_entries at its minimum)
// and a flush writes 20,000 refusals of distinct resources, every lease
// renewal succeeds within renewBudget, every grant succeeds, and no fenced
// write is answered 503.
func TestAuditWorkNeverHoldsFencing(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }))
	defer up.Close()
	c := config.Default()
	// httptest.NewRequest names the host example.com.
	c.Control.AllowedHosts = []string{"example.com"}
	c.Store = filepath.Join(t.TempDir(), "fencegw.db")
	c.Routes = []config.Route{{Prefix: "/w/", Upstream: up.URL, Tokens: config.TokensRaw, Resource: "leader",
		RawOnLeased: config.RawOnLeasedAllow}} // the fenced writes stand for the leader's
	c.Audit.History.MaxEntries = 100
	c.Audit.History.MaxPending = 30000
	c.Audit.Flush = config.Duration(time.Minute) // flushed by hand below
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), c, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fillAudit(t, s.store, 60000)
	epoch := mustLeaseCall(t, s, "leader", "acquire", `{"holder":"node-a","ttl_seconds":15}`)
	for i := range 20000 {
		s.audit.Refused(time.Now(), wire.Rejection{Resource: fmt.Sprintf("r-%d", i), Decision: string(tokens.DecisionStale),
			PresentedEpoch: wire.EpochOf(1), Route: "/w/", Status: 412}, "")
	}

	stop := make(chan struct{})
	var work sync.WaitGroup
	work.Add(2)
	go func() { defer work.Done(); s.purgeAudit(stop) }()
	go func() { defer work.Done(); _ = s.FlushAudit(context.Background()) }()
	workDone := make(chan struct{})
	go func() { work.Wait(); close(workDone) }()

	var slowest time.Duration
	renewals, writes := 0, 0
	for i := 0; ; i++ {
		select {
		case <-workDone:
			t.Logf("%d renewals (slowest %v), %d fenced writes, %d grants while the audit was purged and flushed",
				renewals, slowest, writes, i)
			return
		default:
		}
		start := time.Now()
		mustLeaseCall(t, s, "leader", "renew", fmt.Sprintf(`{"holder":"node-a","epoch":%d}`, epoch))
		if d := time.Since(start); d > renewBudget {
			t.Fatalf("a renewal took %v, beyond the leader's renew budget %v", d, renewBudget)
		} else {
			slowest = max(slowest, d)
		}
		renewals++
		mustLeaseCall(t, s, fmt.Sprintf("grant-%d", i), "acquire", `{"holder":"node-b","ttl_seconds":15}`)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/w/x", strings.NewReader("payload"))
		req.Header.Set(gateway.TokenHeader, strconv.FormatInt(epoch, 10))
		s.Proxy().ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			t.Fatalf("a fenced write during audit work: %d %s", rec.Code, rec.Body)
		}
		writes++
		time.Sleep(20 * time.Millisecond)
	}
}

// fillAudit puts n refusal entries of the last minutes into store.
func fillAudit(t *testing.T, store tokens.Store, n int) {
	t.Helper()
	now := time.Now()
	entries := make([]tokens.AuditEntry, 0, n)
	for i := range n {
		at := now.Add(-time.Duration(i) * time.Millisecond)
		entries = append(entries, tokens.AuditEntry{Stream: tokens.AuditRefusals, ID: tokens.AuditID(at, strconv.Itoa(i)),
			Resource: "r-" + strconv.Itoa(i), Kind: "stale", First: at, Last: at, Count: 1})
	}
	if err := store.PutAudit(context.Background(), entries); err != nil {
		t.Fatal(err)
	}
}

// mustLeaseCall makes a lease call through the control API and returns
// the lease's epoch; any answer but 200 fails the test.
func mustLeaseCall(t *testing.T, s *Server, name, op, body string) int64 {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/v1/leases/"+name+"/"+op, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	s.Control().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("%s %s: %d %s", op, name, rec.Code, rec.Body)
	}
	var l struct {
		Epoch wire.Epoch `json:"epoch"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil {
		t.Fatal(err)
	}
	return int64(l.Epoch)
}
