package tokens_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/internal/testutil/testpg"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
	"github.com/fencegw/fencegw/tokens/etcdstore"
	"github.com/fencegw/fencegw/tokens/pgstore"
)

// BenchmarkFenceAdmit measures Fence.Admit at the current epoch on each
// store, from 32 goroutines at once: from memory on the embedded store,
// through coalesced linearizable reads on PostgreSQL and etcd; and a stale
// epoch, refused from memory on every store.
//
//	go test -run '^$' -bench BenchmarkFenceAdmit -benchmem ./tokens
func BenchmarkFenceAdmit(b *testing.B) {
	ctx := context.Background()
	stores := []struct {
		name string
		open func(b *testing.B) tokens.Store
	}{
		{"embedded", func(b *testing.B) tokens.Store {
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "fencegw.db"))
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"postgres", func(b *testing.B) tokens.Store {
			s, err := pgstore.Open(ctx, testpg.Shared(b).NewDatabase(b))
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"etcd", func(b *testing.B) tokens.Store {
			s, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: testetcd.Start(b, 1).Endpoints(), DialTimeout: 5 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			defer s.Close()
			f := tokens.NewFence(s, tokens.FenceOptions{})
			if err := f.Admit(ctx, "bench", 5); err != nil {
				b.Fatal(err)
			}
			b.Run("current", func(b *testing.B) { admitParallel(b, f, 5, nil) })
			b.Run("stale", func(b *testing.B) { admitParallel(b, f, 4, new(*tokens.StaleEpochError)) })
		})
	}
}

func admitParallel(b *testing.B, f *tokens.Fence, epoch int64, want any) {
	b.ReportAllocs()
	b.SetParallelism(16) // 32 goroutines on two cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			err := f.Admit(context.Background(), "bench", epoch)
			if (err == nil) != (want == nil) {
				b.Errorf("Admit(%d) = %v", epoch, err)
				return
			}
		}
	})
}
