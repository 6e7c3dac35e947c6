package pgstore_test

import (
	"testing"

	"github.com/fencegw/fencegw/internal/testpg"
	"github.com/fencegw/fencegw/tokens/pgstore"
	"github.com/fencegw/fencegw/tokens/storetest"
)

// BenchmarkAuditFilteredList: filtered queries over 110,000 entries (110
// per resource).
func BenchmarkAuditFilteredList(b *testing.B) {
	s, err := pgstore.Open(b.Context(), testpg.Shared(b).NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	entries := storetest.AuditBenchEntries(110_000)
	storetest.FillAudit(b, s, entries)
	storetest.BenchAuditQueries(b, s, entries)
}
