package signed

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// TestAuthorityClock: an authority issues and checks tokens on its clock,
// so a jump of that clock moves iat, and a replica whose clock did not
// jump sees such a token issued in the future (refused past the leeway).
func TestAuthorityClock(t *testing.T) {
	clock := &tokens.OffsetClock{}
	clock.Set(time.Hour)
	a, err := NewAuthority(context.Background(), AuthorityOptions{Algorithm: AlgEdDSA, Issuer: "i", Audience: "a",
		Lifetime: 10 * time.Minute, KeepBeside: filepath.Join(t.TempDir(), "key.pem"), Clock: clock}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := a.Issue("node-a", "r", 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Verifier.VerifyClaims(tok)
	if err != nil {
		t.Fatalf("the jumped authority refuses its own token: %v", err)
	}
	if d := time.Until(c.IssuedAt); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("iat is %s from the host's time, want the clock's offset (1h)", d)
	}
	unjumped, err := NewVerifier(a.Keys, "i", "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unjumped.VerifyClaims(tok); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("a verifier on the host's clock accepted a token issued an hour ahead: %v", err)
	}
}
