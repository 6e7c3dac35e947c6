package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"sync"
)

// requestDigest identifies a keyed write without its body: method, path
// and query, hex. It is known when the key is claimed, before any of the
// body has arrived.
func requestDigest(r *http.Request) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s", r.Method, r.URL.EscapedPath(), r.URL.RawQuery)
	return hex.EncodeToString(h.Sum(nil))
}

// fingerprint identifies a keyed write whole: method, path, query and the
// digest of its body. It is known only once the whole body was read.
func fingerprint(r *http.Request, bodyDigest []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%x", r.Method, r.URL.EscapedPath(), r.URL.RawQuery, bodyDigest)
	return hex.EncodeToString(h.Sum(nil))
}

// hashedBody is a request body that hashes what is read from it as it
// streams through; nothing of it is kept. Reads are serialized: a
// transport may still read the body on another goroutine after its
// RoundTrip returned, while finish reads the rest.
type hashedBody struct {
	mu  sync.Mutex
	src io.ReadCloser
	h   hash.Hash
	eof bool
	err error // the first read error other than io.EOF
}

// newHashedBody hashes src (no body when nil).
func newHashedBody(src io.ReadCloser) *hashedBody {
	if src == nil {
		src = http.NoBody
	}
	return &hashedBody{src: src, h: sha256.New()}
}

func (b *hashedBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.read(p)
}

// read reads from src into p and hashes it; b.mu is held.
func (b *hashedBody) read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.src.Read(p)
	b.h.Write(p[:n])
	switch {
	case err == io.EOF:
		b.eof = true
	case err != nil:
		b.err = err
	}
	return n, err
}

// Close leaves the client's body open: finish may still read the rest of
// it, and the server closes it when the request ends.
func (b *hashedBody) Close() error { return nil }

// finish reads what is left of the body (the upstream may have answered
// before reading all of it) and returns the digest of the whole body, or
// an error when it cannot be read whole (the client went away, was too
// slow, sent more than allowed): then the body's digest is unknown.
func (b *hashedBody) finish() ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.eof && b.err == nil {
		buf := make([]byte, 32<<10)
		for !b.eof && b.err == nil {
			b.read(buf)
		}
	}
	if b.err != nil {
		return nil, fmt.Errorf("read the request body to its end: %w", b.err)
	}
	return b.h.Sum(nil), nil
}
