package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/internal/etcdclient"
)

// DefaultDialTimeout is the DialTimeout used when Options leaves it zero.
const DefaultDialTimeout = etcdclient.DefaultDialTimeout

// Options configures Open. ParseURL builds one from a store URL.
type Options struct {
	// Endpoints are the client URLs of cluster members, all "https://" (TLS
	// against the system's roots) or none ("host:port", "http://host:port").
	Endpoints []string
	// Prefix is prepended verbatim to a resource's name to form its key;
	// DefaultPrefix if empty. See New.
	Prefix string
	// DialTimeout bounds Open's wait for the cluster: an auth token, then
	// the first linearizable read. DefaultDialTimeout if zero; a negative
	// value is refused. Later operations are bounded by their contexts.
	DialTimeout time.Duration
	// Username and Password log in to etcd's auth system; both or neither.
	Username, Password string
	// Clock is the wall clock the leases' reported expiries are computed
	// on (the system clock when nil). Whether a lease is live is decided
	// by etcd, and how long it stays live on this process's monotonic
	// clock, never by it.
	Clock tokens.Clock
}

// Open connects to the cluster described by o and returns a Store that owns
// its client: Close closes it. The client's own logs are discarded; failures
// reach the caller as errors (build a client yourself and use New to keep
// them).
//
// Open returns only once the cluster has answered a linearizable read, so a
// cluster without quorum or out of reach fails Open, with a
// *tokens.UnavailableError, after DialTimeout or when ctx ends, whichever is
// first. Invalid options fail with a plain error naming the field.
func Open(ctx context.Context, o Options) (*Store, error) {
	prefix := o.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	cli, err := etcdclient.Open(ctx, etcdclient.Options{Endpoints: o.Endpoints, DialTimeout: o.DialTimeout,
		Username: o.Username, Password: o.Password}, prefix)
	var invalid *etcdclient.OptionError
	switch {
	case errors.As(err, &invalid):
		return nil, fmt.Errorf("etcdstore: %w", err)
	case err != nil:
		return nil, unavailable("open", "", err)
	}
	s := newStore(etcdclient.Owned(cli), prefix)
	s.clock = tokens.ClockOr(o.Clock)
	return s, nil
}
