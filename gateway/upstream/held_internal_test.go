package upstream

import (
	"errors"
	"github.com/fencegw/fencegw/gateway/observe"
	"github.com/fencegw/fencegw/gateway/reqctx"
	"github.com/fencegw/fencegw/policy"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHeldWriterHoldsTheLastByte: a leased request reaches the upstream's
// socket whole only after release: until then every byte but its last has
// left, however it was cut into writes, and the bytes the kernel took are
// counted.
func TestHeldWriterHoldsTheLastByte(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	got := make(chan []byte, 64)
	go func() {
		for {
			b := make([]byte, 64)
			n, err := server.Read(b)
			if err != nil {
				close(got)
				return
			}
			got <- b[:n]
		}
	}()
	c := &upstreamConn{conn: client}
	w := &heldWriter{c: c}
	var seen strings.Builder
	drain := func(want string) {
		t.Helper()
		for seen.Len() < len(want) {
			select {
			case b := <-got:
				seen.Write(b)
			case <-time.After(5 * time.Second):
				t.Fatalf("the upstream has %q, want %q", seen.String(), want)
			}
		}
		if seen.String() != want {
			t.Fatalf("the upstream has %q, want %q", seen.String(), want)
		}
	}
	for _, part := range []string{"POST / HTTP/1.1\r\n", "a", "", "bc"} {
		if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
			t.Fatalf("Write(%q) = %d, %v", part, n, err)
		}
	}
	drain("POST / HTTP/1.1\r\nab") // all but the last byte
	if sent, err := w.release(); !sent || err != nil {
		t.Fatalf("release = %v, %v", sent, err)
	}
	drain("POST / HTTP/1.1\r\nabc")
	if c.sent != int64(len("POST / HTTP/1.1\r\nabc")) {
		t.Errorf("sent = %d", c.sent)
	}
}

// TestUncertainDeliveryIsNotACut: a deadline that came while only the last
// bytes were unacknowledged is answered as an upstream failure whose
// outcome is unknown (502, "may or may not"), never as the 412 of a cut
// write, whose upstream is certain to hold a torn request.
func TestUncertainDeliveryIsNotACut(t *testing.T) {
	past := time.Now().Add(-time.Second)
	err := uncertainAfter(past, errors.New("write: i/o timeout"))
	if !errors.Is(err, errDeliveryUncertain) || errors.Is(err, errDeliveryCut) {
		t.Fatalf("uncertainAfter = %v", err)
	}
	if err := uncertainAfter(time.Now().Add(time.Hour), io.ErrUnexpectedEOF); err != io.ErrUnexpectedEOF {
		t.Errorf("an error before the deadline = %v, want it as it was", err)
	}
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/w/x", nil)
	r = r.WithContext(reqctx.WithRoute(r.Context(), &policy.Route{Name: "/w/", Prefix: "/w/"}))
	refusals := observe.NewRefusalLog(slog.New(slog.DiscardHandler), observe.RefusalLogOptions{})
	ErrorHandler(slog.New(slog.DiscardHandler), nil, refusals)(rec, r, err)
	if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "may or may not") {
		t.Errorf("answer = %d %s", rec.Code, rec.Body)
	}
}
