package zksource

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/fencegw/fencegw/tokens/source"
)

// ErrNoSession is wrapped by the error Current returns while the client
// has no live session with the ensemble (disconnected, reconnecting, or
// its session expired): it cannot read, and fails closed.
var ErrNoSession = errors.New("no ZooKeeper session")

// errLeaderVanished is wrapped when the lowest child disappeared between
// listing the children and reading it, on every attempt.
var errLeaderVanished = errors.New("the election's lowest child kept disappearing while it was read")

// readAttempts is how often a read lists the children again after the
// lowest one disappeared before it could be read.
const readAttempts = 3

// Source reads leaders of ZooKeeper elections. It implements source.Source
// and is safe for concurrent use. Create it with Open.
type Source struct {
	conn *zk.Conn
	path string // Options.Path, with its placeholders

	closer source.Closer
}

var _ source.Source = (*Source)(nil)

// Open validates o (see Options.Validate), connects to the ensemble and
// returns a Source once the client has a session; Close closes the client.
// The client's own logs are discarded; failures reach the caller as errors.
// Open fails when no server gives a session before ctx ends, so an
// ensemble out of reach fails Open rather than the first request.
//
// After Open, the client reconnects by itself, to the same session while it
// has not expired and to a new one after; reads fail closed meanwhile.
func Open(ctx context.Context, o Options) (*Source, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	conn, events, err := zk.Connect(o.Servers, o.SessionTimeout, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, fmt.Errorf("zksource: connect: %w", err)
	}
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return &Source{conn: conn, path: o.Path}, nil
			}
		case <-ctx.Done():
			conn.Close()
			return nil, fmt.Errorf("zksource: no session with %s: %w", strings.Join(o.Servers, ","), ctx.Err())
		}
	}
}

// Current reads the leader of the election at the source's path, with
// every {resource} in it replaced by resource: sync on that path, then its
// children, then the data and Stat of the child with the lowest sequence
// number (see the package documentation). No parent znode, or no child
// with a sequence number, gives source.Leader{} (no leader).
//
// Every error wraps a *tokens.UnavailableError: the caller must fail
// closed. It also wraps source.ErrClosed after Close, ErrNoSession without
// a live session, and ErrInvalidPath when resource makes the path invalid.
// A read whose context
// ends returns at once with the context's error.
func (s *Source) Current(ctx context.Context, resource string) (source.Leader, error) {
	return source.ReadLeader(ctx, resource, s.current)
}

func (s *Source) current(ctx context.Context, resource string) (source.Leader, error) {
	if s.closer.Closed() {
		return source.Leader{}, fmt.Errorf("zksource: %w", source.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return source.Leader{}, fmt.Errorf("zksource: %w", err)
	}
	path := strings.ReplaceAll(s.path, ResourcePlaceholder, resource)
	if err := checkZnode(path); err != nil {
		return source.Leader{}, fmt.Errorf("zksource: election of resource %q: %w", resource, err)
	}
	if st := s.conn.State(); st != zk.StateHasSession {
		return source.Leader{}, fmt.Errorf("zksource: %w (%v)", ErrNoSession, st)
	}
	// The client's calls take no context: the read runs on its own and
	// ends when the server answers, the connection fails or Close flushes
	// it; a caller whose context ends does not wait for it.
	type result struct {
		l   source.Leader
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := s.read(path)
		done <- result{l, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return source.Leader{}, fmt.Errorf("zksource: read leader of election %q: %w", path, r.err)
		}
		return r.l, nil
	case <-ctx.Done():
		return source.Leader{}, fmt.Errorf("zksource: read leader of election %q: %w", path, ctx.Err())
	}
}

// read syncs path, lists its children and reads the lowest one. When that
// child is gone by the time it is read (its session ended in between), the
// children are listed again.
func (s *Source) read(path string) (source.Leader, error) {
	for range readAttempts {
		// sync makes the connected server catch up with the ensemble's
		// leader; the reads below, on the same session, come after it.
		if _, err := s.conn.Sync(path); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return source.Leader{}, fmt.Errorf("sync: %w", err)
		}
		children, _, err := s.conn.Children(path)
		if errors.Is(err, zk.ErrNoNode) {
			return source.Leader{}, nil
		}
		if err != nil {
			return source.Leader{}, fmt.Errorf("children: %w", err)
		}
		name, ok := lowest(children)
		if !ok {
			return source.Leader{}, nil
		}
		data, stat, err := s.conn.Get(path + "/" + name)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return source.Leader{}, fmt.Errorf("get %s: %w", name, err)
		}
		holder := string(data)
		if holder == "" {
			holder = name
		}
		return source.Leader{Held: true, Epoch: stat.Czxid, Holder: holder, Live: true}, nil
	}
	return source.Leader{}, errLeaderVanished
}

// Close closes the client, ending its session; reads in flight fail, and
// Current then fails with source.ErrClosed. Close always returns nil and
// may be called more than once.
func (s *Source) Close() error {
	return s.closer.Close(func() error {
		s.conn.Close()
		return nil
	})
}

// quiet is a zk.Logger that discards everything.
type quiet struct{}

func (quiet) Printf(string, ...any) {}
