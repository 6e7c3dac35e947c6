package control

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// DefaultWatchWriteTimeout bounds each write to a lease watch when
// Options.WatchWriteTimeout is 0.
const DefaultWatchWriteTimeout = 10 * time.Second

// sseWriter writes a lease watch's stream. Every write, flush included,
// must finish within timeout: a watcher that stops reading fills its
// socket's buffers, the write fails at its deadline, and the watch ends.
// Once stopping closes, the connection's write deadline is set to now, so
// a write blocked on a watcher that does not read fails at once and
// shutdown never waits on it.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration

	mu      sync.Mutex // orders deadline changes: stop wins over send
	stopped bool
	done    chan struct{}
	wg      sync.WaitGroup
}

// newSSEWriter returns the writer of w's stream; call close when the
// handler returns.
func newSSEWriter(w http.ResponseWriter, timeout time.Duration, stopping <-chan struct{}) *sseWriter {
	if timeout <= 0 {
		timeout = DefaultWatchWriteTimeout
	}
	s := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout, done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-stopping:
			s.mu.Lock()
			s.stopped = true
			s.rc.SetWriteDeadline(time.Now()) // unblocks a write in progress
			s.mu.Unlock()
		case <-s.done:
		}
	}()
	return s
}

// errWatchStopped means the gateway is shutting down.
var errWatchStopped = errors.New("lease watch: the gateway is shutting down")

// send writes p and flushes it, within the write timeout. An error means
// the watch must end: the watcher is gone, stopped reading, or the gateway
// is shutting down.
func (s *sseWriter) send(p []byte) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return errWatchStopped
	}
	err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	s.mu.Unlock()
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		return fmt.Errorf("lease watch: setting the write deadline: %w", err)
	}
	if _, err := s.w.Write(p); err != nil {
		return fmt.Errorf("lease watch: writing: %w", err)
	}
	if err := s.rc.Flush(); err != nil {
		return fmt.Errorf("lease watch: flushing: %w", err)
	}
	return nil
}

// close ends the stop watcher; call it once, when the handler returns.
func (s *sseWriter) close() {
	close(s.done)
	s.wg.Wait()
}
