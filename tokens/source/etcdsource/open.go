package etcdsource

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegw/fencegw/tokens/internal/etcdclient"
)

// DefaultDialTimeout is the DialTimeout used when Options leaves it zero.
const DefaultDialTimeout = etcdclient.DefaultDialTimeout

// Options configures Open: the cluster's Endpoints (all "https://" for TLS
// against the system's roots, or none), DialTimeout (how long Open waits
// for the cluster's first linearizable read; DefaultDialTimeout if zero,
// never negative; later reads are bounded by their contexts), and Username
// and Password for etcd's auth system (both or neither).
type Options = etcdclient.Options

// Source reads leaders of etcd elections. It implements source.Source with
// the resource name as the election prefix; ForPrefix gives a Source bound
// to one prefix. It is safe for concurrent use.
type Source struct {
	conn *etcdclient.Handle // owned when the Source came from Open
}

// Open connects to the cluster described by o and returns a Source that
// owns its client: Close closes it. The client's own logs are discarded;
// failures reach the caller as errors.
//
// Open returns only once the cluster has answered a linearizable read, so
// a cluster without quorum or out of reach fails Open after DialTimeout or
// when ctx ends, whichever is first. Invalid options fail at once with an
// error naming the field.
func Open(ctx context.Context, o Options) (*Source, error) {
	// Linearizable (the default): it needs a quorum, as every Current does.
	cli, err := etcdclient.Open(ctx, o, "fencegw/etcdsource/probe")
	if err != nil {
		return nil, fmt.Errorf("etcdsource: %w", err)
	}
	return &Source{conn: etcdclient.Owned(cli)}, nil
}

// New returns a Source that reads through c. The caller keeps ownership of
// c: Close does not close it.
func New(c *clientv3.Client) *Source {
	return &Source{conn: etcdclient.Borrowed(c)}
}

// Close makes Current fail with source.ErrClosed on s and on every Source
// ForPrefix returned, and closes the client if Open created it. It may be
// called more than once and returns the first call's error.
func (s *Source) Close() error { return s.conn.Close() }
