package sourcetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/source"
)

// Verdict names what source.Check answers for a presented epoch.
type Verdict string

// The verdicts.
const (
	Admit      Verdict = "admit"
	Superseded Verdict = "superseded"          // stale: below the leader's epoch
	Lapsed     Verdict = source.ReasonLapsed   // stale: the leader's, but lapsed
	NoLeader   Verdict = source.ReasonNoLeader // stale: there is no leader
	NotIssued  Verdict = "not issued"          // above the leader's epoch
)

// VerdictOf names the verdict err stands for, or returns "" when err is
// none of them.
func VerdictOf(err error) Verdict {
	var (
		stale     *tokens.StaleEpochError
		notIssued *tokens.EpochNotIssuedError
	)
	switch {
	case err == nil:
		return Admit
	case errors.As(err, &notIssued):
		return NotIssued
	case errors.As(err, &stale) && stale.Reason == "":
		return Superseded
	case errors.As(err, &stale):
		return Verdict(stale.Reason)
	}
	return ""
}

// Context returns a context that ends after d or when t ends.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return c
}

// Current reads resource's leader from s, failing t on an error.
func Current(t testing.TB, s source.Source, resource string) source.Leader {
	t.Helper()
	l, err := s.Current(Context(t, 10*time.Second), resource)
	if err != nil {
		t.Fatalf("Current(%q): %v", resource, err)
	}
	return l
}

// MustLeader fails t unless s says want about resource.
func MustLeader(t testing.TB, s source.Source, resource string, want source.Leader) {
	t.Helper()
	if got := Current(t, s, resource); got != want {
		t.Fatalf("Current(%q) = %+v, want %+v", resource, got, want)
	}
}

// MustCheck reads resource's leader from s and fails t unless source.Check
// answers want for presented.
func MustCheck(t testing.TB, s source.Source, resource string, presented int64, want Verdict) {
	t.Helper()
	if err := source.Check(Current(t, s, resource), resource, presented); VerdictOf(err) != want {
		t.Fatalf("Check(%q, %d) = %v, want %s", resource, presented, err, want)
	}
}

// MustUnavailable fails t unless err wraps a *tokens.UnavailableError and
// is no verdict.
func MustUnavailable(t testing.TB, what string, err error) {
	t.Helper()
	var u *tokens.UnavailableError
	if !errors.As(err, &u) || VerdictOf(err) != "" {
		t.Fatalf("%s = %v (%T), want only a *tokens.UnavailableError", what, err, err)
	}
}

// mustStale fails t unless err is exactly this *tokens.StaleEpochError.
func mustStale(t *testing.T, err error, resource string, presented, current int64, reason string) {
	t.Helper()
	want := tokens.StaleEpochError{Resource: resource, Presented: presented, Current: current, Reason: reason}
	var got *tokens.StaleEpochError
	if !errors.As(err, &got) || *got != want {
		t.Fatalf("verdict %#v, want %#v", err, &want)
	}
}

// mustNotIssued fails t unless err is exactly this
// *tokens.EpochNotIssuedError.
func mustNotIssued(t *testing.T, err error, resource string, presented, issued int64) {
	t.Helper()
	want := tokens.EpochNotIssuedError{Resource: resource, Presented: presented, Issued: issued}
	var got *tokens.EpochNotIssuedError
	if !errors.As(err, &got) || *got != want {
		t.Fatalf("verdict %#v, want %#v", err, &want)
	}
}
