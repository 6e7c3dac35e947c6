package etcdsource

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencegw/fencegw/internal/etcdtls"
)

// DefaultDialTimeout is the DialTimeout used when Options leaves it zero.
const DefaultDialTimeout = 5 * time.Second

// Options configures Open.
type Options struct {
	// Endpoints are client URLs of cluster members: "host:port" or
	// "http://host:port" for plaintext, "https://host:port" for TLS verified
	// against the system's root certificates. Either all use TLS or none.
	Endpoints []string
	// DialTimeout bounds how long Open waits for the cluster to answer its
	// first linearizable read; DefaultDialTimeout if zero. Later reads are
	// bounded by their contexts.
	DialTimeout time.Duration
	// Username and Password authenticate to etcd's auth system. Set both
	// or neither.
	Username, Password string
}

// Source reads leaders of etcd elections. It implements source.Source with
// the resource name as the election prefix; ForPrefix gives a Source bound
// to one prefix. It is safe for concurrent use.
type Source struct {
	cli   *clientv3.Client
	owned bool // Close closes cli

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
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
	if len(o.Endpoints) == 0 {
		return nil, errors.New("etcdsource: Endpoints: none given")
	}
	tlsConfig, err := etcdtls.ForEndpoints(o.Endpoints)
	if err != nil {
		return nil, fmt.Errorf("etcdsource: Endpoints: %w", err)
	}
	if (o.Username == "") != (o.Password == "") {
		return nil, errors.New("etcdsource: Username and Password must be set together")
	}
	if o.DialTimeout < 0 {
		return nil, fmt.Errorf("etcdsource: DialTimeout %v is negative", o.DialTimeout)
	}
	timeout := o.DialTimeout
	if timeout == 0 {
		timeout = DefaultDialTimeout
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   append([]string(nil), o.Endpoints...),
		DialTimeout: timeout,
		TLS:         tlsConfig,
		Username:    o.Username,
		Password:    o.Password,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcdsource: connecting to %s: %w", strings.Join(o.Endpoints, ","), err)
	}
	s := New(cli)
	s.owned = true
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Linearizable (the default): it needs a quorum, as every Current does.
	if _, err := cli.Get(pctx, "fencegw/etcdsource/probe", clientv3.WithCountOnly()); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("etcdsource: %s: %w", strings.Join(o.Endpoints, ","), err)
	}
	return s, nil
}

// New returns a Source that reads through c. The caller keeps ownership of
// c: Close does not close it.
func New(c *clientv3.Client) *Source {
	return &Source{cli: c}
}

// Close makes Current fail with source.ErrClosed on s and on every Source
// ForPrefix returned, and closes the client if Open created it. It may be
// called more than once and returns the first call's error.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.owned {
			s.closeErr = s.cli.Close()
		}
	})
	return s.closeErr
}
