package pgstore_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/internal/testutil/testpg"
	"github.com/fencegw/fencegw/tokens/pgstore"
	"github.com/fencegw/fencegw/tokens/storetest"
)

// BenchmarkAuditFilteredList: filtered queries over 110,000 entries (110
// per resource), the table analyzed as autovacuum would.
func BenchmarkAuditFilteredList(b *testing.B) {
	dsn := testpg.Shared(b).NewDatabase(b)
	s, err := pgstore.Open(b.Context(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	entries := storetest.AuditBenchEntries(110_000)
	storetest.FillAudit(b, s, entries)
	conn, err := pgx.Connect(b.Context(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(b.Context())
	if _, err := conn.Exec(b.Context(), "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	storetest.BenchAuditQueries(b, s, entries)
}
