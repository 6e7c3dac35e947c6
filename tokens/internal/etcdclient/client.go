// Package etcdclient opens the etcd clients of the etcd store and the etcd
// epoch source alike: one validation of the connection options, one choice
// of TLS from the endpoints, and one wait for the cluster to answer before a
// client is handed out.
package etcdclient

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// DefaultDialTimeout is the DialTimeout used when Options leaves it zero.
const DefaultDialTimeout = 5 * time.Second

// KeepAliveTime and KeepAliveTimeout are the client's keepalive: a
// connection to a member that has sent nothing for KeepAliveTime is pinged,
// and closed (the client reconnects, or uses another member) when the ping
// is not answered within KeepAliveTimeout. etcd's servers refuse pings more
// often than every 5 seconds by default.
const (
	KeepAliveTime    = 5 * time.Second
	KeepAliveTimeout = 2 * time.Second
)

// Options says how to reach a cluster.
type Options struct {
	// Endpoints are client URLs of cluster members: "host:port" or
	// "http://host:port" for plaintext, "https://host:port" for TLS verified
	// against the system's root certificates. Either all use TLS or none.
	Endpoints []string
	// DialTimeout bounds how long Open waits for the cluster (an auth
	// token, then the first linearizable read); DefaultDialTimeout if zero.
	// It must not be negative.
	DialTimeout time.Duration
	// Username and Password authenticate to etcd's auth system. Set both or
	// neither.
	Username, Password string
}

// OptionError reports an Options field that cannot be used. Callers tell it
// from a cluster that cannot be reached with errors.As.
type OptionError struct {
	Field string // the Options field: Endpoints, DialTimeout, Username
	Msg   string
}

func (e *OptionError) Error() string { return e.Field + ": " + e.Msg }

// Validate returns a *OptionError when o cannot be used: no endpoints, an
// empty one, endpoints that mix https and plaintext, only one of Username
// and Password, or a negative DialTimeout.
func (o Options) Validate() error {
	_, err := o.tlsConfig()
	return err
}

// tlsConfig validates o and returns the TLS configuration its endpoints call for.
func (o Options) tlsConfig() (*tls.Config, error) {
	if len(o.Endpoints) == 0 {
		return nil, &OptionError{Field: "Endpoints", Msg: "none given"}
	}
	tc, err := tlsFor(o.Endpoints)
	if err != nil {
		return nil, &OptionError{Field: "Endpoints", Msg: err.Error()}
	}
	if (o.Username == "") != (o.Password == "") {
		return nil, &OptionError{Field: "Username", Msg: "Username and Password must be set together"}
	}
	if o.DialTimeout < 0 {
		return nil, &OptionError{Field: "DialTimeout", Msg: fmt.Sprintf("%v is negative", o.DialTimeout)}
	}
	return tc, nil
}

// Open validates o (a *OptionError when it cannot be used) and returns a
// client of the cluster once the cluster has answered a linearizable read
// of probeKey (a count, not the value), which needs a quorum as every read
// of the store and the source does. It fails after DialTimeout or when ctx
// ends, whichever comes first, with an error naming the endpoints, and then
// leaves no client open. The client's own logs are discarded: failures reach
// the caller as errors. The caller closes the client.
func Open(ctx context.Context, o Options, probeKey string) (*clientv3.Client, error) {
	tc, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}
	timeout := o.DialTimeout
	if timeout == 0 {
		timeout = DefaultDialTimeout
	}
	endpoints := strings.Join(o.Endpoints, ",")
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   append([]string(nil), o.Endpoints...),
		DialTimeout: timeout,
		// A member behind a partition keeps its connection open but
		// answers nothing: without keepalive pings the client would go on
		// sending it requests, which time out, long after the partition
		// healed. etcd refuses pings more often than every 5s.
		DialKeepAliveTime:    KeepAliveTime,
		DialKeepAliveTimeout: KeepAliveTimeout,
		TLS:                  tc,
		Username:             o.Username,
		Password:             o.Password,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", endpoints, err)
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := cli.Get(pctx, probeKey, clientv3.WithCountOnly()); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("%s: get %q: %w", endpoints, probeKey, err)
	}
	return cli, nil
}
