package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testpg"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/pgstore"
	"github.com/fencegw/fencegw/tokens/storetest"
)

func TestLeaseContract(t *testing.T) { storetest.RunLeases(t, fresh) }

func TestLeaseRecordsContract(t *testing.T) { storetest.RunLeaseRecords(t, fresh) }

// TestConcurrentAcquireTwoPools has four holders, two on each of two stores
// (two connection pools), take one lease in turns, each 20 times. The
// grants, chained by their Previous, must form one sequence of strictly
// increasing epochs in which no live lease of another holder is taken over,
// and the HWM must end at the last grant.
func TestConcurrentAcquireTwoPools(t *testing.T) {
	dsn := testpg.Shared(t).NewDatabase(t)
	stores := []*pgstore.Store{open(t, dsn), open(t, dsn)}
	const workers, each, name = 4, 20, "contended-lease"
	var (
		mu     sync.Mutex
		grants []tokens.Grant
		wg     sync.WaitGroup
	)
	errc := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, holder := stores[w%2], fmt.Sprintf("node-%d", w)
			deadline := time.Now().Add(60 * time.Second)
			for i := 0; i < each; {
				c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				g, err := s.Acquire(c, name, holder, tokens.Terms{TTL: time.Second}, tokens.Caller{})
				cancel()
				var held *tokens.LeaseHeldError
				switch {
				case errors.As(err, &held):
					if time.Now().After(deadline) {
						errc <- fmt.Errorf("%s: still refused after 60s: %w", holder, err)
						return
					}
					time.Sleep(2 * time.Millisecond)
					continue
				case err != nil:
					errc <- fmt.Errorf("%s: Acquire: %w", holder, err)
					return
				}
				mu.Lock()
				grants = append(grants, g)
				mu.Unlock()
				i++
				if w == 0 && i == each/2 {
					// Leave this one to lapse: another holder takes over by
					// expiry on the database's clock.
					time.Sleep(1200 * time.Millisecond)
					continue
				}
				c, cancel = context.WithTimeout(context.Background(), 30*time.Second)
				err = s.Release(c, name, holder, g.Epoch, tokens.Caller{})
				cancel()
				var lost *tokens.LeaseLostError
				if err != nil && !errors.As(err, &lost) {
					errc <- fmt.Errorf("%s: Release: %w", holder, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if len(grants) != workers*each {
		t.Fatalf("%d grants, want %d", len(grants), workers*each)
	}
	sort.Slice(grants, func(i, j int) bool { return grants[i].Epoch < grants[j].Epoch })
	takeovers := 0
	for i, g := range grants {
		if g.Epoch != int64(i+1) {
			t.Fatalf("grant #%d has epoch %d: epochs are not 1..%d without repeats", i, g.Epoch, len(grants))
		}
		if i == 0 {
			if g.Previous != nil {
				t.Fatalf("first grant has a previous lease %+v", *g.Previous)
			}
			continue
		}
		// The database saw the grant with the next lower epoch as the
		// previous one: grant order and epoch order are the same.
		p, before := g.Previous, grants[i-1]
		if p == nil || p.Epoch != before.Epoch || p.Holder != before.Holder {
			t.Fatalf("grant at epoch %d by %s followed %+v, want the grant at epoch %d by %s",
				g.Epoch, g.Holder, p, before.Epoch, before.Holder)
		}
		if p.Held && p.Holder != g.Holder {
			t.Fatalf("grant at epoch %d to %s took over %s's live lease %+v", g.Epoch, g.Holder, p.Holder, *p)
		}
		if p.Holder != g.Holder && p.ExpiresAt.After(g.ExpiresAt.Add(-g.TTL)) {
			t.Fatalf("grant at epoch %d at %v took over a lease ending later: %+v",
				g.Epoch, g.ExpiresAt.Add(-g.TTL), *p)
		}
		if p.Holder != g.Holder {
			takeovers++
		}
	}
	last := grants[len(grants)-1]
	mustCurrent(t, stores[0], name, last.Epoch)
	mustCurrent(t, stores[1], name, last.Epoch)
	if got := queryInt(t, dsn, "SELECT issued FROM fencegw_hwm WHERE resource = $1", name); got != last.Epoch {
		t.Fatalf("issued = %d, want %d", got, last.Epoch)
	}
	l, err := stores[1].Lease(ctx(t, 30*time.Second), name)
	if err != nil || l.Epoch != last.Epoch || l.Holder != last.Holder {
		t.Fatalf("Lease = %+v, %v; want %s at epoch %d", l, err, last.Holder, last.Epoch)
	}
	t.Logf("%d grants, %d to another holder than the previous", len(grants), takeovers)
}

// TestLeaseStoreDown stops the server under a held lease: every lease
// operation fails as unavailable, and once the server is back the holder
// renews the same lease at the same epoch.
func TestLeaseStoreDown(t *testing.T) {
	cl := testpg.Require(t)
	dsn := cl.NewDatabase(t)
	s := open(t, dsn)
	g, err := s.Acquire(ctx(t, 30*time.Second), "l", "node-a", tokens.Terms{TTL: time.Minute}, tokens.Caller{})
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}

	if err := cl.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, op := range []struct {
		name string
		fn   func(context.Context) error
	}{
		{"Renew", func(c context.Context) error {
			_, err := s.Renew(c, "l", "node-a", g.Epoch, tokens.Caller{})
			return err
		}},
		{"Acquire", func(c context.Context) error {
			_, err := s.Acquire(c, "l", "node-b", tokens.Terms{TTL: time.Second}, tokens.Caller{})
			return err
		}},
		{"Release", func(c context.Context) error { return s.Release(c, "l", "node-a", g.Epoch, tokens.Caller{}) }},
		{"Lease", func(c context.Context) error { _, err := s.Lease(c, "l"); return err }},
		{"Advance", func(c context.Context) error { _, err := s.Advance(c, "l", g.Epoch+1); return err }},
	} {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		start := time.Now()
		err := op.fn(c)
		cancel()
		u := mustBeUnavailable(t, op.name+" while down", err)
		if u.Resource != "l" {
			t.Fatalf("%s while down: %+v, want resource l", op.name, u)
		}
		t.Logf("%s while down failed after %v: %v", op.name, time.Since(start).Round(time.Millisecond), err)
	}

	if err := cl.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	l, err := s.Renew(ctx(t, 30*time.Second), "l", "node-a", g.Epoch, tokens.Caller{})
	if err != nil || l.Epoch != g.Epoch || !l.Held {
		t.Fatalf("Renew after restart = %+v, %v", l, err)
	}
	_, err = s.Acquire(ctx(t, 30*time.Second), "l", "node-b", tokens.Terms{TTL: time.Second}, tokens.Caller{})
	var held *tokens.LeaseHeldError
	if !errors.As(err, &held) || held.Holder != "node-a" || held.Epoch != g.Epoch {
		t.Fatalf("Acquire by another holder after restart = %v, want *LeaseHeldError", err)
	}
	mustCurrent(t, s, "l", g.Epoch)
}

// TestDeadlinesOnDatabaseClock moves a lease's deadline on the database
// only: liveness follows it at once, whatever the process's clock says.
func TestDeadlinesOnDatabaseClock(t *testing.T) {
	dsn := testpg.Shared(t).NewDatabase(t)
	s := open(t, dsn)
	c := ctx(t, 30*time.Second)
	g, err := s.Acquire(c, "l", "node-a", tokens.Terms{TTL: time.Hour}, tokens.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	dbNow := queryTime(t, dsn, "SELECT now()")
	if d := g.ExpiresAt.Sub(dbNow); d < 59*time.Minute || d > time.Hour {
		t.Fatalf("ExpiresAt %v is %v after the database's now %v, want about 1h", g.ExpiresAt, d, dbNow)
	}
	if g.ExpiresAt.Location() != time.UTC {
		t.Fatalf("ExpiresAt %v is not in UTC", g.ExpiresAt)
	}
	sql(t, dsn, "UPDATE fencegw_lease SET expires_at = now() - interval '1 second' WHERE name = 'l'")
	l, err := s.Lease(c, "l")
	if err != nil || l.Held {
		t.Fatalf("Lease after the deadline passed on the database = %+v, %v; want not held", l, err)
	}
	_, err = s.Renew(c, "l", "node-a", g.Epoch, tokens.Caller{})
	var lost *tokens.LeaseLostError
	if !errors.As(err, &lost) || lost.Reason != "expired" || lost.Current.Epoch != g.Epoch {
		t.Fatalf("Renew after the deadline = %v, want *LeaseLostError expired", err)
	}
	b, err := s.Acquire(c, "l", "node-b", tokens.Terms{TTL: time.Second}, tokens.Caller{})
	if err != nil || b.Epoch != g.Epoch+1 || b.Previous == nil || b.Previous.Held {
		t.Fatalf("takeover = %+v, %v", b, err)
	}
	_, err = s.Renew(c, "l", "node-a", g.Epoch, tokens.Caller{})
	if !errors.As(err, &lost) || lost.Current.Holder != "node-b" {
		t.Fatalf("Renew after takeover = %v, want *LeaseLostError naming node-b", err)
	}
	t.Logf("lost: %v", err)
}

// TestEpochExhausted: a grant never wraps past 2^63-1.
func TestEpochExhausted(t *testing.T) {
	dsn := testpg.Shared(t).NewDatabase(t)
	s := open(t, dsn)
	c := ctx(t, 30*time.Second)
	mustAdvance(t, s, "top", math.MaxInt64)
	_, err := s.Acquire(c, "top", "node-a", tokens.Terms{TTL: time.Second}, tokens.Caller{})
	var exhausted *tokens.EpochExhaustedError
	if !errors.As(err, &exhausted) || exhausted.Epoch != math.MaxInt64 {
		t.Fatalf("Acquire over HWM 2^63-1 = %v, want *tokens.EpochExhaustedError", err)
	}
	if _, err := s.Lease(c, "top"); !errors.Is(err, tokens.ErrLeaseNotFound) {
		t.Fatalf("refused grant left a lease: %v", err)
	}
	mustCurrent(t, s, "top", math.MaxInt64)

	// A lease whose own epoch is the highest.
	mustAdvance(t, s, "near", math.MaxInt64-1)
	g, err := s.Acquire(c, "near", "node-a", tokens.Terms{TTL: time.Second}, tokens.Caller{})
	if err != nil || g.Epoch != math.MaxInt64 {
		t.Fatalf("Acquire over HWM 2^63-2 = %+v, %v", g, err)
	}
	_, err = s.Acquire(c, "near", "node-a", tokens.Terms{TTL: time.Second}, tokens.Caller{})
	if !errors.As(err, &exhausted) || exhausted.Name != "near" || exhausted.Epoch != math.MaxInt64 {
		t.Fatalf("Acquire over lease epoch 2^63-1 = %v, want *tokens.EpochExhaustedError", err)
	}
	l, err := s.Lease(c, "near")
	if err != nil || l.Epoch != math.MaxInt64 || l.Holder != "node-a" {
		t.Fatalf("lease after refused grant = %+v, %v", l, err)
	}
}

// TestMigrateFromV1 opens a database that an earlier fencegw set up at
// schema version 1: the HWMs are kept, their resources have no issued epoch
// and still take any epoch, and leases work.
func TestMigrateFromV1(t *testing.T) {
	dsn := testpg.Shared(t).NewDatabase(t)
	sql(t, dsn, `CREATE TABLE fencegw_schema_version (
	version    integer PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
)`)
	sql(t, dsn, `CREATE TABLE fencegw_hwm (
	resource   text COLLATE "C" PRIMARY KEY,
	epoch      bigint NOT NULL CHECK (epoch > 0),
	updated_at timestamptz NOT NULL DEFAULT now()
)`)
	sql(t, dsn, "INSERT INTO fencegw_schema_version (version) VALUES (1)")
	sql(t, dsn, "INSERT INTO fencegw_hwm (resource, epoch) VALUES ('old', 40), ('leased', 7)")

	s := open(t, dsn)
	if got := queryInt(t, dsn, "SELECT max(version) FROM fencegw_schema_version"); got != 9 {
		t.Fatalf("schema version = %d, want 9", got)
	}
	mustCurrent(t, s, "old", 40)
	mustAdvance(t, s, "old", 1000)
	g, err := s.Acquire(ctx(t, 30*time.Second), "leased", "node-a", tokens.Terms{TTL: time.Minute}, tokens.Caller{})
	if err != nil || g.Epoch != 8 || g.Previous != nil {
		t.Fatalf("Acquire over a v1 HWM of 7 = %+v, %v; want epoch 8", g, err)
	}
	_, err = s.Advance(ctx(t, 30*time.Second), "leased", 9)
	var notIssued *tokens.EpochNotIssuedError
	if !errors.As(err, &notIssued) || notIssued.Issued != 8 {
		t.Fatalf("Advance(leased, 9) = %v, want *EpochNotIssuedError issued 8", err)
	}
	open(t, dsn) // already at the latest version: no DDL
	if got := queryInt(t, dsn, "SELECT count(*) FROM fencegw_schema_version"); got != 9 {
		t.Fatalf("schema version rows = %d, want 9", got)
	}
}

// TestMigrateFromV3 opens a database at schema version 3, whose lease rows
// have no owner: they become unowned grants, which any caller may renew,
// and the next grant records its caller.
func TestMigrateFromV3(t *testing.T) {
	dsn := testpg.Shared(t).NewDatabase(t)
	old := open(t, dsn)
	g, err := old.Acquire(ctx(t, 30*time.Second), "lease", "node-a", tokens.Terms{TTL: time.Minute}, tokens.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	// Take the schema back to version 3, as an earlier fencegw left it.
	sql(t, dsn, "DROP TRIGGER fencegw_lease_notify ON fencegw_lease")
	sql(t, dsn, "DROP FUNCTION fencegw_lease_notify()")
	sql(t, dsn, "ALTER TABLE fencegw_lease DROP COLUMN owner, DROP COLUMN lock_delay_ms, DROP COLUMN released, DROP COLUMN version")
	sql(t, dsn, "DROP TABLE fencegw_idempotency")
	sql(t, dsn, "DROP TABLE fencegw_audit")
	sql(t, dsn, "DROP TABLE fencegw_lease_event")
	sql(t, dsn, "DELETE FROM fencegw_schema_version WHERE version >= 4")

	s := open(t, dsn)
	if got := queryInt(t, dsn, "SELECT max(version) FROM fencegw_schema_version"); got != 9 {
		t.Fatalf("schema version = %d, want 9", got)
	}
	// Version 9 starts the lease event log with every existing lease.
	if got := queryInt(t, dsn, "SELECT count(*) FROM fencegw_lease_event WHERE name = 'lease'"); got != 1 {
		t.Fatalf("lease events after the migration = %d, want 1", got)
	}
	c := ctx(t, 30*time.Second)
	l, err := s.Renew(c, "lease", "node-a", g.Epoch, tokens.Caller{Name: "key-two"})
	if err != nil || l.Owner != "" || l.Epoch != g.Epoch {
		t.Fatalf("renew of a v3 lease = %+v, %v; want it unowned", l, err)
	}
	k, err := s.Acquire(c, "lease", "node-a", tokens.Terms{TTL: time.Minute}, tokens.Caller{Name: "key-one"})
	if err != nil || k.Owner != "key-one" || k.Epoch != g.Epoch+1 {
		t.Fatalf("re-acquire of a v3 lease = %+v, %v", k, err)
	}
	_, err = s.Renew(c, "lease", "node-a", k.Epoch, tokens.Caller{Name: "key-two"})
	if !errors.As(err, new(*tokens.LeaseOwnedError)) {
		t.Fatalf("renew by another key after the migration = %v, want *tokens.LeaseOwnedError", err)
	}
}

// TestAdvanceAfterGrantKeepsIssued: an admitted Advance on a leased
// resource keeps its issued epoch, and resources stay independent.
func TestAdvanceAfterGrantKeepsIssued(t *testing.T) {
	dsn := testpg.Shared(t).NewDatabase(t)
	s := open(t, dsn)
	c := ctx(t, 30*time.Second)
	mustAdvance(t, s, "l", 3)
	g, err := s.Acquire(c, "l", "node-a", tokens.Terms{TTL: time.Minute}, tokens.Caller{})
	if err != nil || g.Epoch != 4 {
		t.Fatalf("Acquire = %+v, %v", g, err)
	}
	mustAdvance(t, s, "l", 4)
	if got := queryInt(t, dsn, "SELECT issued FROM fencegw_hwm WHERE resource = 'l'"); got != 4 {
		t.Fatalf("issued = %d after admitting the issued epoch, want 4", got)
	}
	_, err = s.Advance(c, "l", 3)
	var stale *tokens.StaleEpochError
	if !errors.As(err, &stale) || stale.Current != 4 {
		t.Fatalf("Advance(l, 3) = %v, want stale at 4", err)
	}
	// "l2" shares a prefix with "l" but no lease.
	mustAdvance(t, s, "l2", 100)
}

// queryTime runs a query returning one timestamp on dsn outside the store.
func queryTime(t *testing.T, dsn, query string) time.Time {
	t.Helper()
	v := queryInt(t, dsn, "SELECT (extract(epoch FROM ("+query+")) * 1000000)::bigint")
	return time.UnixMicro(v).UTC()
}

// TestAdvanceRacesGrants presents epochs just above the HWM while grants
// raise it: every Advance is admitted, stale or not issued (never
// unavailable), and every admitted epoch is one that a grant issued.
func TestAdvanceRacesGrants(t *testing.T) {
	dsn := testpg.Shared(t).NewDatabase(t)
	s1, s2 := open(t, dsn), open(t, dsn)
	const name, grantsWanted = "raced", 60
	var (
		mu       sync.Mutex
		granted  = map[int64]bool{}
		admitted []int64
		wg       sync.WaitGroup
		done     = make(chan struct{})
	)
	errc := make(chan error, 8)
	// The first grant comes before any Advance, which could otherwise
	// admit any epoch while no lease has been granted.
	first, err := s1.Acquire(ctx(t, 30*time.Second), name, "node-a", tokens.Terms{TTL: time.Second}, tokens.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	granted[first.Epoch] = true
	if err := s1.Release(ctx(t, 30*time.Second), name, "node-a", first.Epoch, tokens.Caller{}); err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { // the grantor: acquire and release in turns
		defer wg.Done()
		defer close(done)
		for range grantsWanted - 1 {
			g, err := s1.Acquire(context.Background(), name, "node-a", tokens.Terms{TTL: time.Second}, tokens.Caller{})
			if err != nil {
				errc <- fmt.Errorf("Acquire: %w", err)
				return
			}
			mu.Lock()
			granted[g.Epoch] = true
			mu.Unlock()
			if err := s1.Release(context.Background(), name, "node-a", g.Epoch, tokens.Caller{}); err != nil {
				errc <- fmt.Errorf("Release: %w", err)
				return
			}
		}
	}()
	for w := range 4 {
		wg.Add(1)
		go func() { // advancers: the HWM, or one or two above it
			defer wg.Done()
			s := []*pgstore.Store{s1, s2}[w%2]
			for {
				select {
				case <-done:
					return
				default:
				}
				cur, err := s.Current(context.Background(), name)
				if err != nil {
					errc <- fmt.Errorf("Current: %w", err)
					return
				}
				e := max(cur, 1) + int64(w%3)
				_, err = s.Advance(context.Background(), name, e)
				var (
					stale     *tokens.StaleEpochError
					notIssued *tokens.EpochNotIssuedError
				)
				switch {
				case err == nil:
					mu.Lock()
					admitted = append(admitted, e)
					mu.Unlock()
				case errors.As(err, &stale) && stale.Current > e:
				case errors.As(err, &notIssued) && notIssued.Issued < e:
				default:
					errc <- fmt.Errorf("Advance(%d): %w", e, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for _, e := range admitted {
		if !granted[e] {
			t.Fatalf("admitted epoch %d that no grant issued", e)
		}
	}
	if len(granted) != grantsWanted || !granted[grantsWanted] {
		t.Fatalf("grants issued %v, want epochs 1..%d", granted, grantsWanted)
	}
	mustCurrent(t, s1, name, grantsWanted)
	t.Logf("%d grants, %d admitted advances", len(granted), len(admitted))
}

func TestIdempotencyContract(t *testing.T) { storetest.RunIdempotency(t, fresh) }

func TestAuditContract(t *testing.T) { storetest.RunAudit(t, fresh) }
