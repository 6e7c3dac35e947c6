package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/tokens"
)

// leaseChannel is the NOTIFY channel of lease changes (see migration 7).
const leaseChannel = "fencegw_lease"

// listener holds one connection that LISTENs on leaseChannel while the
// Store is open and someone watches a lease, and fans the notifications
// out. After a broken connection it listens again and notifies every
// subscriber, who may have missed a change meanwhile.
type listener struct {
	pool  *pgxpool.Pool
	notes tokens.Notifications

	mu     sync.Mutex
	cancel context.CancelFunc // nil until started, and after stop
	done   chan struct{}
}

// SubscribeLease notifies of every change of lease name through any
// replica, by PostgreSQL's LISTEN/NOTIFY; see tokens.LeaseNotifier. Lapses
// are not notified: a watcher learns them from the expiry it read.
func (s *Store) SubscribeLease(ctx context.Context, name string) (<-chan struct{}, error) {
	if err := tokens.ValidateResource(name); err != nil {
		return nil, err
	}
	ch := s.listen.notes.Subscribe(ctx, name)
	s.listen.start()
	return ch, nil
}

func (l *listener) start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil || l.done != nil {
		return // running, or stopped for good
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go l.run(ctx)
}

// stop ends the listener for good.
func (l *listener) stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel = nil
	if done == nil {
		l.done = make(chan struct{}) // never starts now
		close(l.done)
	}
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	for ctx.Err() == nil {
		l.listenOnce(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// listenOnce listens on a connection of its own until it breaks or ctx
// ends.
func (l *listener) listenOnce(ctx context.Context) {
	pc, err := l.pool.Acquire(ctx)
	if err != nil {
		return
	}
	conn := pc.Hijack() // it will listen: never back to the pool
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+leaseChannel); err != nil {
		return
	}
	l.notes.NotifyAll() // what changed before the LISTEN
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			l.notes.NotifyAll()
			return
		}
		l.notes.Notify(n.Payload)
	}
}
