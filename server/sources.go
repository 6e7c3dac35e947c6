package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/etcdsource"
	"github.com/fencegw/fencegw/tokens/source/pgsource"
)

// openTimeout bounds opening one epoch source.
const openTimeout = 30 * time.Second

// sourceSet opens the epoch sources of one route table and closes them
// together when that table is retired. Each open gets its own deadline, so
// a reload long after start-up opens sources like the first load did.
type sourceSet struct {
	timeout time.Duration // bounds each check, as store_timeout bounds store calls
	opened  []io.Closer
}

// open opens one route's epoch source, coalescing its reads; errors name
// the field. The source answers checks with the domain's verdicts itself.
func (o *sourceSet) open(field string, c *config.EpochSource) (tokens.EpochSource, error) {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
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
	default:
		return nil, fmt.Errorf("%s.kind: unknown kind %q", field, c.Kind)
	}
	cs := source.Coalesce(s, o.timeout)
	o.opened = append(o.opened, cs)
	return cs, nil
}

// Close closes every source the set opened.
func (o *sourceSet) Close() error {
	var errs []error
	for _, c := range o.opened {
		errs = append(errs, c.Close())
	}
	o.opened = nil
	return errors.Join(errs...)
}

// retire closes the set once requests that matched its table before a swap
// can no longer be checking against it: each check is bounded by the
// set's timeout. A check still waiting then is released with an error
// wrapping *tokens.UnavailableError (the write fails closed).
func (o *sourceSet) retire() {
	if len(o.opened) == 0 {
		return
	}
	time.AfterFunc(2*o.timeout+time.Second, func() { o.Close() })
}
