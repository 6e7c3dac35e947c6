package upstream

import (
	"errors"
	"github.com/fencegw/fencegw/gateway/observe"
	"github.com/fencegw/fencegw/gateway/reqctx"
	"github.com/fencegw/fencegw/policy"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

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
