package etcdsource

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens/source"
)

var _ source.Source = (*Source)(nil)

// ErrEmptyPrefix is wrapped by the error Current returns for an empty
// election prefix: it would read every election under "/".
var ErrEmptyPrefix = errors.New("empty election prefix")

// Current reads the leader of the election whose prefix is resource, as
// concurrency.NewElection(session, resource) campaigns on it (keys under
// resource+"/"). See ForPrefix for the reading itself. Every error wraps a
// *tokens.UnavailableError: the caller must fail closed. After Close, it
// also wraps source.ErrClosed.
func (s *Source) Current(ctx context.Context, resource string) (source.Leader, error) {
	return s.leader(ctx, resource, resource)
}

// ForPrefix returns a Source whose Current ignores the resource name and
// reads the election with the given prefix: the prefix passed to
// concurrency.NewElection, without the "/" it appends (no trailing slash
// is added or removed here either). Its Close closes s, and so every other
// Source obtained from s.
func (s *Source) ForPrefix(prefix string) source.Source {
	return &prefixSource{s: s, prefix: prefix}
}

// leader mirrors concurrency.Election.Leader: the key under prefix+"/"
// with the lowest create revision, by a linearizable Get. Errors are about
// resource.
func (s *Source) leader(ctx context.Context, resource, prefix string) (source.Leader, error) {
	if s.conn.Closed() {
		return source.Leader{}, source.Unavailable(resource, fmt.Errorf("etcdsource: %w", source.ErrClosed))
	}
	if prefix == "" {
		return source.Leader{}, source.Unavailable(resource, fmt.Errorf("etcdsource: %w", ErrEmptyPrefix))
	}
	resp, err := s.conn.Client.Get(ctx, prefix+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return source.Leader{}, source.Unavailable(resource, fmt.Errorf("etcdsource: read leader of election %q: %w", prefix, err))
	}
	if len(resp.Kvs) == 0 {
		return source.Leader{}, nil
	}
	kv := resp.Kvs[0]
	return source.Leader{Held: true, Epoch: kv.CreateRevision, Holder: string(kv.Value), Live: true}, nil
}

// prefixSource is a view of a Source bound to one election prefix.
type prefixSource struct {
	s      *Source
	prefix string
}

// Current reads the leader of the view's election, whatever resource is.
func (p *prefixSource) Current(ctx context.Context, resource string) (source.Leader, error) {
	return p.s.leader(ctx, resource, p.prefix)
}

// Close closes the Source the view came from.
func (p *prefixSource) Close() error { return p.s.Close() }
