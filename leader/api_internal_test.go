package leader

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-3", 0},
		{"7", 7 * time.Second},
		{"99999999999", maxLeaseDuration},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestAPIErrorClasses(t *testing.T) {
	for _, tc := range []struct {
		op          string
		status      int
		typ         string
		lost, fatal bool
		held        bool
	}{
		{opAcquire, http.StatusConflict, "", false, false, true},
		{opAcquire, http.StatusConflict, "urn:fencegw:problem:lease-held", false, false, true},
		{opAcquire, http.StatusConflict, "urn:fencegw:problem:epoch-exhausted", false, true, false},
		{opAcquire, http.StatusForbidden, "urn:fencegw:problem:lease-owned", false, true, false},
		{opRenew, http.StatusForbidden, "urn:fencegw:problem:lease-owned", false, true, false},
		{opRelease, http.StatusForbidden, "urn:fencegw:problem:lease-owned", false, true, false},
		{opAcquire, http.StatusUnauthorized, "", false, true, false},
		{opAcquire, http.StatusForbidden, "", false, true, false},
		{opAcquire, http.StatusBadRequest, "", false, true, false},
		{opAcquire, http.StatusNotFound, "", false, true, false},
		{opAcquire, http.StatusTooManyRequests, "", false, false, false},
		{opAcquire, http.StatusServiceUnavailable, "", false, false, false},
		{opRenew, http.StatusConflict, "", true, false, false},
		{opRenew, http.StatusNotFound, "", true, false, false},
		{opRenew, http.StatusUnauthorized, "", false, true, false},
		{opRenew, http.StatusBadGateway, "", false, false, false},
		{opRelease, http.StatusConflict, "", true, false, false},
	} {
		err := error(&APIError{Op: tc.op, Lease: "l", Status: tc.status, Type: tc.typ})
		if got := errors.Is(err, ErrLeaseLost); got != tc.lost {
			t.Errorf("%s %d: lost = %v, want %v", tc.op, tc.status, got, tc.lost)
		}
		if got := isFatal(err); got != tc.fatal {
			t.Errorf("%s %d: fatal = %v, want %v", tc.op, tc.status, got, tc.fatal)
		}
		if got := isHeld(err); got != tc.held {
			t.Errorf("%s %d: held = %v, want %v", tc.op, tc.status, got, tc.held)
		}
	}
}

func TestLeaseURL(t *testing.T) {
	for _, tc := range []struct{ endpoint, name, want string }{
		{"http://h:1", "invoice-sweeper", "http://h:1/v1/leases/invoice-sweeper/renew"},
		{"http://h:1/", "email:tenant-42", "http://h:1/v1/leases/email:tenant-42/renew"},
		{"https://h/fencegw/", "a/b c%", "https://h/fencegw/v1/leases/a%2Fb%20c%25/renew"},
	} {
		a, err := newAPI(Config{Endpoint: tc.endpoint, Name: tc.name, Holder: "h"}, http.DefaultClient)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.url(opRenew); got != tc.want {
			t.Errorf("url(%q, %q) = %s, want %s", tc.endpoint, tc.name, got, tc.want)
		}
	}
}
