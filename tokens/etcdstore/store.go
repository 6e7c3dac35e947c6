package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/internal/etcdclient"
)

// DefaultPrefix is the key prefix used when none is given.
const DefaultPrefix = "/fencegw/hwm/"

// ErrClosed is wrapped by the *tokens.UnavailableError that a Store returns
// once it has been closed.
var ErrClosed = errors.New("etcdstore: store closed")

// Store is a tokens.Store over an etcd cluster. It is safe for concurrent use.
type Store struct {
	conn   *etcdclient.Handle // owned when the Store came from Open
	cli    *clientv3.Client   // conn.Client
	prefix string
	lives  *lifeCache
	idem   *idemLeases
	clock  tokens.Clock // reported expiries; see Options.Clock
	scan   reclaimCursor
	// auditIdx: whether the audit's index is complete (see auditindex.go).
	auditIdx auditIndexState
	// minTTL is the cluster's minimum lease TTL in seconds, once a grant
	// showed it above DefaultMinLeaseTTL (0 until then); see MinLeaseTTL.
	minTTL atomic.Int64
}

var _ tokens.Store = (*Store)(nil)

// New returns a Store over c, keeping HWMs under prefix (DefaultPrefix if
// empty). The key of a resource is prefix+resource, verbatim: a prefix should
// end with a separator such as "/" so that it cannot run into another
// prefix's keys. Lease keys live under prefix too, behind a NUL byte that no
// resource name holds (see the package documentation). c must not be nil;
// closing the Store does not close it.
func New(c *clientv3.Client, prefix string) *Store {
	return newStore(etcdclient.Borrowed(c), prefix)
}

func newStore(conn *etcdclient.Handle, prefix string) *Store {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Store{conn: conn, cli: conn.Client, prefix: prefix, lives: newLifeCache(), idem: &idemLeases{}, clock: tokens.SystemClock{}}
}

// Current returns the HWM of resource, or 0 if its key is absent, by a
// linearizable read. An invalid resource returns an error wrapping
// tokens.ErrInvalidResource; any other failure, including a corrupt value
// (ErrCorruptValue), a *tokens.UnavailableError.
func (s *Store) Current(ctx context.Context, resource string) (int64, error) {
	const op = "current"
	if err := tokens.ValidateResource(resource); err != nil {
		return 0, err
	}
	if s.conn.Closed() {
		return 0, unavailable(op, resource, ErrClosed)
	}
	key := s.key(resource)
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return 0, unavailable(op, resource, fmt.Errorf("get %q: %w", key, err))
	}
	epoch, _, err := readEpoch(key, resp.Kvs)
	if err != nil {
		return 0, unavailable(op, resource, err)
	}
	return epoch, nil
}

// Advance raises the HWM of resource to epoch if epoch is not below it and
// returns epoch. If epoch is below the HWM it returns a
// *tokens.StaleEpochError holding the HWM and changes nothing. If a lease
// named resource was ever granted (its issued key exists) and epoch is above
// the highest epoch issued, it returns a *tokens.EpochNotIssuedError and
// changes nothing. An invalid resource or epoch returns an error wrapping
// tokens.ErrInvalidResource or tokens.ErrInvalidEpoch; any other failure a
// *tokens.UnavailableError, in which case the write may or may not have
// happened.
//
// It reads the HWM and issued keys in one linearizable transaction and, if
// epoch is higher than the HWM and allowed by the issued epoch, writes it in
// a transaction that succeeds only if neither key's revision changed since
// the read (absent keys still absent), so that neither a concurrent Advance
// nor a concurrent grant can slip in between. When another writer got there
// first, the transaction's else branch returns both keys again and the
// comparison starts over from them, until the write succeeds, epoch turns
// out stale, equal or not issued, or ctx ends.
func (s *Store) Advance(ctx context.Context, resource string, epoch int64) (int64, error) {
	const op = "advance"
	if err := tokens.ValidateAdvance(resource, epoch); err != nil {
		return 0, err
	}
	if s.conn.Closed() {
		return 0, unavailable(op, resource, ErrClosed)
	}
	key, ikey := s.key(resource), s.issuedKey(resource)
	reads := []clientv3.Op{clientv3.OpGet(key), clientv3.OpGet(ikey)}
	tr, err := s.cli.Txn(ctx).Then(reads...).Commit()
	if err != nil {
		return 0, unavailable(op, resource, fmt.Errorf("get %q and %q: %w", key, ikey, err))
	}
	for {
		kvs, err := ranges(tr.Responses, len(reads))
		if err != nil {
			return 0, unavailable(op, resource, err)
		}
		current, rev, err := readEpoch(key, kvs[0])
		if err != nil {
			return 0, unavailable(op, resource, err)
		}
		issued, irev, err := readEpoch(ikey, kvs[1])
		if err != nil {
			return 0, unavailable(op, resource, err)
		}
		if epoch < current {
			return 0, &tokens.StaleEpochError{Resource: resource, Presented: epoch, Current: current}
		}
		if epoch == current {
			return epoch, nil // the read that saw it was linearizable
		}
		if issued > 0 && epoch > issued {
			return 0, &tokens.EpochNotIssuedError{Resource: resource, Presented: epoch, Issued: issued}
		}
		if err := ctx.Err(); err != nil {
			return 0, unavailable(op, resource, err)
		}
		tr, err = s.cli.Txn(ctx).
			If(unchanged(key, rev), unchanged(ikey, irev)).
			Then(clientv3.OpPut(key, encodeEpoch(epoch))).
			Else(reads...).
			Commit()
		if err != nil {
			return 0, unavailable(op, resource, fmt.Errorf("compare-and-put %q: %w", key, err))
		}
		if tr.Succeeded {
			return epoch, nil
		}
	}
}

// Ping returns nil if the cluster answers a linearizable read of the prefix
// key, which needs a quorum and a leader; otherwise a
// *tokens.UnavailableError.
func (s *Store) Ping(ctx context.Context) error {
	const op = "ping"
	if s.conn.Closed() {
		return unavailable(op, "", ErrClosed)
	}
	if err := s.probe(ctx); err != nil {
		return unavailable(op, "", err)
	}
	return nil
}

// probe reads the prefix key linearizably, counting it rather than fetching
// it.
func (s *Store) probe(ctx context.Context) error {
	if _, err := s.cli.Get(ctx, s.prefix, clientv3.WithCountOnly()); err != nil {
		return fmt.Errorf("get %q: %w", s.prefix, err)
	}
	return nil
}

// Exclusive returns false: any number of processes may share the cluster.
func (s *Store) Exclusive() bool { return false }

// Close makes every later call fail with ErrClosed and, if the Store was
// made by Open, closes its client. Later calls of Close do nothing and
// return what the first returned.
func (s *Store) Close() error {
	err := s.conn.Close()
	s.auditIdx.stop()
	return err
}

func (s *Store) key(resource string) string { return s.prefix + resource }

func unavailable(op, resource string, err error) error {
	return &tokens.UnavailableError{Op: op, Resource: resource, Err: err}
}
