package etcdstore

import (
	"context"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
)

// LiveLeases counts the live leases: those with an alive key (held) or a
// delay key (held, or lapsed and in the lock-delay), owners taken from
// their records; see tokens.LeaseCounter. One transaction reads the three
// prefixes at one revision; the records' range grows with the records
// kept (reclaim bounds them).
func (s *Store) LiveLeases(ctx context.Context) (tokens.LiveCount, error) {
	if s.conn.Closed() {
		return tokens.LiveCount{}, &tokens.UnavailableError{Op: "count leases", Err: ErrClosed}
	}
	alive, delay, lease := s.prefix+aliveSub, s.prefix+delaySub, s.prefix+leaseSub
	resp, err := s.cli.Txn(ctx).Then(
		clientv3.OpGet(alive, clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(delay, clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(lease, clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return tokens.LiveCount{}, &tokens.UnavailableError{Op: "count leases", Err: err}
	}
	live := map[string]bool{}
	for i, sub := range []string{alive, delay} {
		for _, kv := range resp.Responses[i].GetResponseRange().GetKvs() {
			live[strings.TrimPrefix(string(kv.Key), sub)] = true
		}
	}
	c := tokens.LiveCount{ByOwner: map[string]int{}}
	for _, kv := range resp.Responses[2].GetResponseRange().GetKvs() {
		if !live[strings.TrimPrefix(string(kv.Key), lease)] {
			continue
		}
		rec, err := decodeRecord(kv)
		if err != nil {
			return tokens.LiveCount{}, &tokens.UnavailableError{Op: "count leases", Err: err}
		}
		c.Total++
		c.ByOwner[rec.Owner]++
	}
	return c, nil
}
