package etcdstore_test

import (
	"context"
	"testing"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/tokens/etcdstore"
)

func TestKeepKeyFirstWins(t *testing.T) {
	c := testetcd.Start(t, 1)
	ctx := context.Background()
	a := etcdstore.New(c.Client(t), "/keys-test/")
	b := etcdstore.New(c.Client(t), "/keys-test/")
	if k, err := a.KeepKey(ctx, "signing-key", []byte("first")); err != nil || string(k) != "first" {
		t.Fatalf("first KeepKey = %q, %v", k, err)
	}
	if k, err := b.KeepKey(ctx, "signing-key", []byte("second")); err != nil || string(k) != "first" {
		t.Fatalf("second KeepKey = %q, %v; want the first key", k, err)
	}
}
