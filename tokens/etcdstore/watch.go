package etcdstore

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// SubscribeLease notifies of every change of lease name through any
// replica, with etcd watches of its record, alive, delay and renewed keys:
// grants, renewals, releases, and lapses (etcd deletes the alive key when
// its lease expires). See tokens.LeaseNotifier. A watch that breaks is
// opened again, with a notification.
func (s *Store) SubscribeLease(ctx context.Context, name string) (<-chan struct{}, error) {
	if err := tokens.ValidateResource(name); err != nil {
		return nil, err
	}
	if s.conn.Closed() {
		return nil, unavailable("watch", name, ErrClosed)
	}
	ch := make(chan struct{}, 1)
	for _, key := range []string{s.leaseKey(name), s.aliveKey(name), s.delayKey(name), s.renewedKey(name)} {
		go s.watchKey(ctx, key, ch)
	}
	return ch, nil
}

// watchKey pokes ch after every change of key, until ctx ends.
func (s *Store) watchKey(ctx context.Context, key string, ch chan struct{}) {
	for ctx.Err() == nil {
		for resp := range s.cli.Watch(clientv3.WithRequireLeader(ctx), key) {
			if resp.Err() != nil || len(resp.Events) > 0 || resp.Canceled {
				poke(ch)
			}
		}
		poke(ch) // the watch ended: something may have been missed
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// poke sends on ch unless a value is pending there already.
func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
