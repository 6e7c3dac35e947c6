package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencegw/fencegw/internal/etcdtls"
)

// DefaultDialTimeout is the DialTimeout used when Options leaves it zero.
const DefaultDialTimeout = 5 * time.Second

// Options configures Open. ParseURL builds one from a store URL.
type Options struct {
	// Endpoints are client URLs of cluster members: "host:port" or
	// "http://host:port" for plaintext, "https://host:port" for TLS verified
	// against the system's root certificates. Either all use TLS or none.
	Endpoints []string
	// Prefix is prepended verbatim to a resource's name to form its key;
	// DefaultPrefix if empty. See New.
	Prefix string
	// DialTimeout bounds how long Open waits for the cluster (fetching an
	// auth token, then the first linearizable read); DefaultDialTimeout if
	// zero. It does not bound later operations: their contexts do.
	DialTimeout time.Duration
	// Username and Password authenticate to etcd's auth system. Set both or
	// neither.
	Username, Password string
}

// Open connects to the cluster described by o and returns a Store that owns
// its client: Close closes it. The client's own logs are discarded; failures
// reach the caller as errors (build a client yourself and use New to keep
// them).
//
// Open returns only once the cluster has answered a linearizable read, so a
// cluster without quorum or out of reach fails Open, with a
// *tokens.UnavailableError, after DialTimeout or when ctx ends, whichever is
// first. Invalid options fail with a plain error.
func Open(ctx context.Context, o Options) (*Store, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("etcdstore: no endpoints")
	}
	tlsConfig, err := etcdtls.ForEndpoints(o.Endpoints)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: %w", err)
	}
	if (o.Username == "") != (o.Password == "") {
		return nil, errors.New("etcdstore: username and password must be set together")
	}
	timeout := o.DialTimeout
	if timeout <= 0 {
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
		return nil, unavailable("open", "", fmt.Errorf("connecting to %s: %w", strings.Join(o.Endpoints, ","), err))
	}
	s := New(cli, o.Prefix)
	s.owned = true
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.probe(pctx); err != nil {
		_ = s.Close()
		return nil, unavailable("open", "", fmt.Errorf("%s: %w", strings.Join(o.Endpoints, ","), err))
	}
	return s, nil
}
