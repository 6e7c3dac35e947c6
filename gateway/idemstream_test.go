package gateway_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/idempotency"
	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/gateway"
)

// patternBody is a body of n bytes, all seed, that allocates nothing as it
// is read.
type patternBody struct {
	n    int64
	seed byte
}

func (b *patternBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	for i := range p {
		p[i] = b.seed
	}
	b.n -= int64(len(p))
	return len(p), nil
}

// digestUpstream answers every write 201 with the hex SHA-256 of its body,
// read as it streams; a path ending in /early is answered without reading
// the body. It counts the writes with each Idempotency-Key.
func digestUpstream(t *testing.T) (*testUpstream, *keyCounts) {
	counts := &keyCounts{}
	u := &testUpstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		counts.add(r.Header.Get(idempotency.KeyHeader))
		if strings.HasSuffix(r.URL.Path, "/early") {
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, "early")
			return
		}
		h := sha256.New()
		if _, err := io.Copy(h, r.Body); err != nil {
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, hex.EncodeToString(h.Sum(nil)))
	}))
	t.Cleanup(u.srv.Close)
	return u, counts
}

// keyCounts counts writes by Idempotency-Key.
type keyCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *keyCounts) add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
}

func (c *keyCounts) of(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

// sendBody posts body to path with a raw epoch and an Idempotency-Key.
func sendBody(t *testing.T, g *gw, path, key string, body io.Reader, size int64) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.proxy.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	req.Header.Set(gateway.TokenHeader, "1")
	req.Header.Set(idempotency.KeyHeader, key)
	return send(t, req)
}

// allocated returns the bytes the process allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestKeyedBodyStreams: a 64 MiB write with an Idempotency-Key streams to
// the upstream whole, without the gateway holding it: the whole process
// (client, gateway and upstream) allocates far less than the body while it
// is forwarded, and again while its retry is hashed and answered from the
// record; a retry with another body of the same length is 422.
func TestKeyedBodyStreams(t *testing.T) {
	const size = 64 << 20
	up, counts := digestUpstream(t)
	g := newGatewayWith(t, boltFresh(t)(t), up, gatewayOptions{maxBody: 1 << 30}, idemRoutes...)
	want := sha256.New()
	io.Copy(want, &patternBody{n: size, seed: 'a'})
	var first, again answer
	n := allocated(func() { first = sendBody(t, g, "/raw/big", "big", &patternBody{n: size, seed: 'a'}, size) })
	t.Logf("forwarding a %d MiB keyed body allocated %.1f MiB", size>>20, float64(n)/(1<<20))
	if first.status != http.StatusCreated || string(first.body) != hex.EncodeToString(want.Sum(nil)) {
		t.Fatalf("first write = %d %s, want 201 and the body's digest", first.status, first.body)
	}
	if n > size/8 {
		t.Errorf("forwarding a %d MiB keyed body allocated %d MiB: the body was buffered", size>>20, n>>20)
	}
	n = allocated(func() { again = sendBody(t, g, "/raw/big", "big", &patternBody{n: size, seed: 'a'}, size) })
	if again.status != http.StatusCreated || again.header.Get(idempotency.IdempotentReplayedHeader) != "true" || string(again.body) != string(first.body) {
		t.Fatalf("retry = %d %s %v, want the answer replayed", again.status, again.body, again.header)
	}
	if n > size/8 {
		t.Errorf("hashing a %d MiB retry allocated %d MiB", size>>20, n>>20)
	}
	if r := sendBody(t, g, "/raw/big", "big", &patternBody{n: size, seed: 'b'}, size); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("the key with another body = %d %s, want 422", r.status, r.body)
	}
	if c := counts.of("big"); c != 1 {
		t.Fatalf("the upstream got the key %d times, want once", c)
	}
}

// TestKeyedBodyFingerprintLifecycle: the body's digest is known only at its
// end, yet a retry while the first write's body is still streaming is 409
// in flight (whatever its body), a later retry with the same body gets the
// answer replayed and one with another body 422 — also when the upstream
// answered before reading the body.
func TestKeyedBodyFingerprintLifecycle(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			up, counts := digestUpstream(t)
			g := newGatewayWith(t, b.fresh(t)(t), up, gatewayOptions{}, idemRoutes...)
			part := strings.Repeat("first half;", 800) // past SmallBodyMax: it streams
			pr, pw := io.Pipe()
			defer pw.Close() // a failure does not leave the write hanging
			done := make(chan answer, 1)
			go func() { done <- sendBody(t, g, "/raw/stream", "s", pr, int64(2*len(part))) }()
			pw.Write([]byte(part))
			for deadline := time.Now().Add(10 * time.Second); counts.of("s") == 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the first write did not reach the upstream")
				}
			}
			for _, body := range []string{part + part, "another body"} {
				r := keyed(t, g, "/raw/stream", "1", "s", body)
				if r.status != http.StatusConflict || r.problem(t)["type"] != problem.TypeIdemInFlight {
					t.Fatalf("retry (%.20q) while the body streams = %d %s, want 409 in flight", body, r.status, r.body)
				}
			}
			pw.Write([]byte(part))
			pw.Close()
			first := <-done
			if first.status != http.StatusCreated {
				t.Fatalf("first = %d %s", first.status, first.body)
			}
			if r := keyed(t, g, "/raw/stream", "1", "s", part+part); r.status != http.StatusCreated ||
				r.header.Get(idempotency.IdempotentReplayedHeader) != "true" || string(r.body) != string(first.body) {
				t.Fatalf("retry with the same body = %d %s, want the answer replayed", r.status, r.body)
			}
			if r := keyed(t, g, "/raw/stream", "1", "s", part+"other half"); r.status != http.StatusUnprocessableEntity {
				t.Fatalf("retry with another body = %d %s, want 422", r.status, r.body)
			}
			// The upstream answers before it reads the body.
			if r := keyed(t, g, "/raw/early", "1", "e", "unread body"); r.status != http.StatusCreated {
				t.Fatalf("early answer = %d %s", r.status, r.body)
			}
			if r := keyed(t, g, "/raw/early", "1", "e", "unread body"); r.header.Get(idempotency.IdempotentReplayedHeader) != "true" {
				t.Fatalf("retry of an early answer = %d %s, want it replayed", r.status, r.body)
			}
			if r := keyed(t, g, "/raw/early", "1", "e", "another body"); r.status != http.StatusUnprocessableEntity {
				t.Fatalf("another body for an early answer = %d %s, want 422", r.status, r.body)
			}
			if counts.of("s") != 1 || counts.of("e") != 1 {
				t.Fatalf("forwarded %d and %d times, want once each", counts.of("s"), counts.of("e"))
			}
		})
	}
}
