package control

import (
	"errors"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"
)

// deafWriter is a ResponseWriter whose peer never reads: a Write blocks
// until the write deadline set through http.ResponseController passes.
type deafWriter struct {
	mu       sync.Mutex
	deadline time.Time
	changed  chan struct{}
}

func newDeafWriter() *deafWriter { return &deafWriter{changed: make(chan struct{}, 1)} }

func (d *deafWriter) Header() http.Header { return http.Header{} }
func (d *deafWriter) WriteHeader(int)     {}
func (d *deafWriter) Flush()              {}

func (d *deafWriter) SetWriteDeadline(t time.Time) error {
	d.mu.Lock()
	d.deadline = t
	d.mu.Unlock()
	select {
	case d.changed <- struct{}{}:
	default:
	}
	return nil
}

func (d *deafWriter) Write(p []byte) (int, error) {
	for {
		d.mu.Lock()
		dl := d.deadline
		d.mu.Unlock()
		wait := time.Hour
		if !dl.IsZero() {
			wait = time.Until(dl)
		}
		if wait <= 0 {
			return 0, os.ErrDeadlineExceeded
		}
		select {
		case <-time.After(wait):
		case <-d.changed:
		}
	}
}

// TestSSEWriterDeadline: a write to a watcher that does not read fails
// once the write timeout passes, not later.
func TestSSEWriterDeadline(t *testing.T) {
	out := newSSEWriter(newDeafWriter(), 200*time.Millisecond, nil)
	defer out.close()
	start := time.Now()
	err := out.send([]byte("data: x\n\n"))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("send = %v, want the deadline exceeded", err)
	}
	if took := time.Since(start); took < 150*time.Millisecond || took > 5*time.Second {
		t.Fatalf("send failed after %s, want about the 200ms write timeout", took)
	}
}

// TestSSEWriterStopping: shutting down fails a write blocked on a watcher
// that does not read at once, however long the write timeout, and every
// later send.
func TestSSEWriterStopping(t *testing.T) {
	stopping := make(chan struct{})
	out := newSSEWriter(newDeafWriter(), time.Hour, stopping)
	defer out.close()
	errc := make(chan error, 1)
	go func() { errc <- out.send([]byte("data: x\n\n")) }()
	time.Sleep(50 * time.Millisecond) // the write blocks
	close(stopping)
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("a blocked write succeeded after shutdown began")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a write blocked on a deaf watcher held shutdown")
	}
	if err := out.send(nil); !errors.Is(err, errWatchStopped) {
		t.Fatalf("send after shutdown = %v, want errWatchStopped", err)
	}
}
