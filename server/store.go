package server

import (
	"context"
	"fmt"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
	"github.com/fencegw/fencegw/tokens/etcdstore"
	"github.com/fencegw/fencegw/tokens/pgstore"
)

// openStore opens the store a config's store setting names; clock is the
// gateway's wall clock (see tokens.Clock).
func openStore(ctx context.Context, store string, clock tokens.Clock) (tokens.Store, error) {
	switch config.KindOf(store) {
	case config.StorePostgres:
		s, err := pgstore.Open(ctx, store)
		if err != nil {
			return nil, fmt.Errorf("open postgres store: %w", err)
		}
		return s, nil
	case config.StoreEtcd:
		u, err := config.ParseEtcdURL(store)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		s, err := etcdstore.Open(ctx, etcdstore.Options{Endpoints: u.Endpoints, Prefix: u.Prefix,
			Username: u.Username, Password: u.Password, Clock: clock})
		if err != nil {
			return nil, fmt.Errorf("open etcd store: %w", err)
		}
		return s, nil
	default:
		return boltstore.OpenClock(store, clock)
	}
}
