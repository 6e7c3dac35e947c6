package pgstore_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/fencegw/fencegw/internal/testutil/testpg"
	"github.com/fencegw/fencegw/tokens/pgstore"
)

func TestKeepKeyFirstWins(t *testing.T) {
	dsn := testpg.Shared(t).NewDatabase(t)
	ctx := context.Background()
	a, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := pgstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	k1, err := a.KeepKey(ctx, "signing-key", []byte("first"))
	if err != nil || !bytes.Equal(k1, []byte("first")) {
		t.Fatalf("first KeepKey = %q, %v", k1, err)
	}
	k2, err := b.KeepKey(ctx, "signing-key", []byte("second"))
	if err != nil || !bytes.Equal(k2, []byte("first")) {
		t.Fatalf("second KeepKey = %q, %v; want the first key", k2, err)
	}
}
