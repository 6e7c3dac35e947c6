package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/etcdsource"
	"github.com/fencegw/fencegw/tokens/source/kubesource"
	"github.com/fencegw/fencegw/tokens/source/pgsource"
	"github.com/fencegw/fencegw/tokens/source/redissource"
	"github.com/fencegw/fencegw/tokens/source/zksource"
)

// sourceSet opens the epoch sources of one route table and closes them
// together when that table is retired. Each open gets its own deadline, so
// a reload long after start-up opens sources like the first load did.
type sourceSet struct {
	timeout time.Duration // bounds each check, as store_timeout bounds store calls

	mu     sync.Mutex // guards opened: a retired set closes on a timer
	opened []io.Closer
}

// open opens one route's epoch source, coalescing its reads; errors name
// the field. The source answers checks with the domain's verdicts itself.
func (o *sourceSet) open(field string, c *config.EpochSource) (tokens.EpochSource, error) {
	ctx, cancel := context.WithTimeout(context.Background(), OpenTimeout)
	defer cancel()
	var s source.Source
	switch c.Kind {
	case "postgres":
		ps, err := pgsource.Open(ctx, pgsource.Options{DSN: c.DSN, Table: c.Table, NameColumn: c.NameColumn,
			HolderColumn: c.HolderColumn, EpochColumn: c.EpochColumn, ExpiresColumn: c.ExpiresColumn})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		s = ps
	case "etcd":
		es, err := etcdsource.Open(ctx, etcdsource.Options{Endpoints: c.Endpoints})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		s = es.ForPrefix(c.Prefix) // closing the view closes es
	case "redis":
		rs, err := redissource.Open(ctx, redissource.Options{Address: c.Address, Key: c.Key})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		s = rs
	case "zookeeper":
		zs, err := zksource.Open(ctx, zksource.Options{Servers: c.Servers, Path: c.Path})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		s = zs
	case "kubernetes":
		ks, err := kubesource.Open(ctx, kubesource.Options{Kubeconfig: c.Kubeconfig, Namespace: c.Namespace, Lease: c.Lease})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		s = ks
	default:
		return nil, fmt.Errorf("%s.kind: unknown kind %q", field, c.Kind)
	}
	cs := source.Coalesce(s, o.timeout)
	o.mu.Lock()
	o.opened = append(o.opened, cs)
	o.mu.Unlock()
	return cs, nil
}

// Close closes every source the set opened; later calls do nothing.
func (o *sourceSet) Close() error {
	o.mu.Lock()
	opened := o.opened
	o.opened = nil
	o.mu.Unlock()
	var errs []error
	for _, c := range opened {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// isClosed reports whether the set holds nothing open.
func (o *sourceSet) isClosed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.opened) == 0
}

// retire closes the set once requests that matched its table before a swap
// can no longer be checking against it: each check is bounded by the
// set's timeout. A check still waiting then is released with an error
// wrapping *tokens.UnavailableError (the write fails closed).
func (o *sourceSet) retire() {
	time.AfterFunc(2*o.timeout+time.Second, func() { o.Close() })
}
