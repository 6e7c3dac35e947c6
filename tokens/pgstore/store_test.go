package pgstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegw/fencegw/internal/testutil/testpg"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/pgstore"
	"github.com/fencegw/fencegw/tokens/storetest"
)

func TestContract(t *testing.T) { storetest.Run(t, fresh) }

// fresh is a new database; each client is a new store (pool) on it.
func fresh(t *testing.T) storetest.Factory {
	dsn := testpg.Shared(t).NewDatabase(t)
	return func(t *testing.T) tokens.Store { return open(t, dsn) }
}

// open opens a store on dsn and closes it when t ends.
func open(t *testing.T, dsn string, opts ...pgstore.Option) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(ctx(t, 30*time.Second), dsn, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ctx(t *testing.T, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

// sql runs one statement on dsn outside the store.
func sql(t *testing.T, dsn, query string, args ...any) {
	t.Helper()
	withConn(t, dsn, func(c context.Context, conn *pgx.Conn) {
		if _, err := conn.Exec(c, query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	})
}

// queryInt runs a query returning one integer on dsn outside the store.
func queryInt(t *testing.T, dsn, query string, args ...any) (v int64) {
	t.Helper()
	withConn(t, dsn, func(c context.Context, conn *pgx.Conn) {
		if err := conn.QueryRow(c, query, args...).Scan(&v); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	})
	return v
}

// withConn runs fn on a connection of its own to dsn.
func withConn(t *testing.T, dsn string, fn func(context.Context, *pgx.Conn)) {
	t.Helper()
	c := ctx(t, 30*time.Second)
	conn, err := pgx.Connect(c, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	fn(c, conn)
}

func mustCurrent(t *testing.T, s tokens.Store, res string, want int64) {
	t.Helper()
	got, err := s.Current(ctx(t, 30*time.Second), res)
	if err != nil || got != want {
		t.Fatalf("Current(%q) = %d, %v; want %d", res, got, err, want)
	}
}

func mustAdvance(t *testing.T, s tokens.Store, res string, epoch int64) {
	t.Helper()
	got, err := s.Advance(ctx(t, 30*time.Second), res, epoch)
	if err != nil || got != epoch {
		t.Fatalf("Advance(%q, %d) = %d, %v; want %d", res, epoch, got, err, epoch)
	}
}

func mustBeUnavailable(t *testing.T, what string, err error) *tokens.UnavailableError {
	t.Helper()
	var u *tokens.UnavailableError
	if !errors.As(err, &u) {
		t.Fatalf("%s = %v (%T), want *tokens.UnavailableError", what, err, err)
	}
	return u
}

func TestConcurrentMigration(t *testing.T) {
	dsn := testpg.Shared(t).NewDatabase(t)
	const n = 4
	var (
		stores [n]*pgstore.Store
		errs   [n]error
		wg     sync.WaitGroup
		start  = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			stores[i], errs[i] = pgstore.Open(ctx(t, 30*time.Second), dsn)
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Open #%d: %v", i, errs[i])
			continue
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	if t.Failed() {
		t.FailNow()
	}
	mustAdvance(t, stores[0], "r", 3)
	for _, s := range stores {
		mustCurrent(t, s, "r", 3)
	}
	// Each version recorded once, however many Opens raced.
	rows := queryInt(t, dsn, "SELECT count(*) FROM fencegw_schema_version")
	if latest := queryInt(t, dsn, "SELECT max(version) FROM fencegw_schema_version"); rows != latest || latest < 2 {
		t.Fatalf("schema version rows = %d, latest version %d; want one row per version", rows, latest)
	}
}

func TestSchemaTooNew(t *testing.T) {
	dsn := testpg.Shared(t).NewDatabase(t)
	open(t, dsn).Close()
	sql(t, dsn, "INSERT INTO fencegw_schema_version (version) VALUES (1000)")
	s, err := pgstore.Open(ctx(t, 30*time.Second), dsn)
	if !errors.Is(err, pgstore.ErrSchemaTooNew) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open = %v, want ErrSchemaTooNew", err)
	}
}

func TestWithSchema(t *testing.T) {
	dsn := testpg.Shared(t).NewDatabase(t)
	const schema = `Fence "GW"`
	s := open(t, dsn, pgstore.WithSchema(schema))
	mustAdvance(t, s, "r", 7)
	open(t, dsn, pgstore.WithSchema(schema)) // already migrated
	ident := pgx.Identifier{schema, "fencegw_hwm"}.Sanitize()
	if got := queryInt(t, dsn, "SELECT epoch FROM "+ident+" WHERE resource = 'r'"); got != 7 {
		t.Fatalf("epoch in %s = %d, want 7", ident, got)
	}
	// The default schema holds a separate table.
	mustCurrent(t, open(t, dsn), "r", 0)
	// So do leases.
	if g, err := s.Acquire(ctx(t, 30*time.Second), "r", "node-a", tokens.Terms{TTL: time.Minute}, tokens.Caller{}); err != nil || g.Epoch != 8 {
		t.Fatalf("Acquire in schema %q = %+v, %v; want epoch 8", schema, g, err)
	}
	leases := pgx.Identifier{schema, "fencegw_lease"}.Sanitize()
	if got := queryInt(t, dsn, "SELECT epoch FROM "+leases+" WHERE name = 'r'"); got != 8 {
		t.Fatalf("epoch in %s = %d, want 8", leases, got)
	}
	if _, err := open(t, dsn).Lease(ctx(t, 30*time.Second), "r"); !errors.Is(err, tokens.ErrLeaseNotFound) {
		t.Fatalf("Lease in the default schema = %v, want ErrLeaseNotFound", err)
	}
}

func TestErrors(t *testing.T) {
	s := open(t, testpg.Shared(t).NewDatabase(t))
	mustAdvance(t, s, "r", 2)

	_, err := s.Advance(ctx(t, 30*time.Second), "r", 0)
	var u *tokens.UnavailableError
	if !errors.Is(err, tokens.ErrInvalidEpoch) || errors.As(err, &u) {
		t.Fatalf("Advance(r, 0) = %v, want a bare ErrInvalidEpoch", err)
	}
	_, err = s.Current(ctx(t, 30*time.Second), "")
	if !errors.Is(err, tokens.ErrInvalidResource) || errors.As(err, &u) {
		t.Fatalf("Current(\"\") = %v, want a bare ErrInvalidResource", err)
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.Advance(cancelled, "r", 3)
	if u := mustBeUnavailable(t, "Advance(cancelled)", err); u.Op != "advance" || u.Resource != "r" {
		t.Fatalf("Advance(cancelled) = %+v", u)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Advance(cancelled) = %v, want it to wrap context.Canceled", err)
	}
	_, err = s.Current(cancelled, "r")
	mustBeUnavailable(t, "Current(cancelled)", err)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Current(cancelled) = %v, want it to wrap context.Canceled", err)
	}
	err = s.Ping(cancelled)
	mustBeUnavailable(t, "Ping(cancelled)", err)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Ping(cancelled) = %v, want it to wrap context.Canceled", err)
	}

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	mustBeUnavailable(t, "Ping after Close", s.Ping(ctx(t, 5*time.Second)))
	_, err = s.Current(ctx(t, 5*time.Second), "r")
	mustBeUnavailable(t, "Current after Close", err)
	_, err = s.Advance(ctx(t, 5*time.Second), "r", 3)
	mustBeUnavailable(t, "Advance after Close", err)
	if s.Exclusive() {
		t.Fatal("Exclusive() = true")
	}
}

func TestOpenUnreachable(t *testing.T) {
	// A port nothing listens on: the store cannot be opened.
	start := time.Now()
	s, err := pgstore.Open(ctx(t, 5*time.Second), "postgres://postgres@127.0.0.1:1/x?sslmode=disable")
	if err == nil {
		s.Close()
		t.Fatal("Open on a closed port succeeded")
	}
	t.Logf("Open on a closed port failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
}

// TestReadOnlyRefused runs the store in sessions that cannot write: Advance
// must never report success, while Current on a primary still answers.
func TestReadOnlyRefused(t *testing.T) {
	cl := testpg.Shared(t)
	dsn := cl.NewDatabase(t)
	s := open(t, dsn)
	mustAdvance(t, s, "r", 5)

	roDSN := dsn + "&default_transaction_read_only=on"
	ro := open(t, roDSN) // schema is current: Open issues no DDL
	_, err := ro.Advance(ctx(t, 30*time.Second), "r", 6)
	mustBeUnavailable(t, "read-only Advance", err)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "25006" {
		t.Fatalf("read-only Advance = %v, want SQLSTATE 25006 read_only_sql_transaction", err)
	}
	mustCurrent(t, ro, "r", 5)
	mustCurrent(t, s, "r", 5)

	// A fresh database cannot be set up from read-only sessions.
	if s, err := pgstore.Open(ctx(t, 30*time.Second), cl.NewDatabase(t)+"&default_transaction_read_only=on"); err == nil {
		s.Close()
		t.Fatal("Open of a fresh database in read-only sessions succeeded")
	}
	// target_session_attrs=read-write in the DSN is honoured.
	if s, err := pgstore.Open(ctx(t, 30*time.Second), roDSN+"&target_session_attrs=read-write"); err == nil {
		s.Close()
		t.Fatal("Open with target_session_attrs=read-write on read-only sessions succeeded")
	}
}
