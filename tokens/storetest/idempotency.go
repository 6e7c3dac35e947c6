package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// RunIdempotency runs the contract of idempotency records: one claim per
// key across clients, settling, replays that survive restarts, expiry.
func RunIdempotency(t *testing.T, fresh func(t *testing.T) Factory) {
	runCases(t, fresh, []contractCase{
		{"ClaimOnce", testClaimOnce},
		{"SettleDoneIsKept", testSettleDone},
		{"SettleUnknownIsKept", testSettleUnknown},
		{"ForgetFreesTheKey", testForget},
		{"SettleByAnotherClaim", testSettleLost},
		{"ConcurrentClaims", testConcurrentClaims},
		{"SurvivesRestart", testIdemRestart},
		{"Expiry", testIdemExpiry},
		{"InvalidKeys", testInvalidIdemKeys},
		{"OperatorForgets", testForgetKey},
		{"FingerprintKnownAtSettle", testFingerprintAtSettle},
	})
}

// testFingerprintAtSettle: the gateway claims a key before the body's
// digest is known (Request set, Fingerprint empty) and records the
// fingerprint with the outcome; both read back as written.
func testFingerprintAtSettle(t *testing.T, f Factory) {
	s := f(t)
	rec := pending("c1")
	rec.Fingerprint, rec.Request = "", "req-1"
	mustClaim(t, s, "r", "k", rec, time.Hour)
	if got, _ := mustClaim(t, s, "r", "k", pending("c2"), time.Hour); got.Request != "req-1" || got.Fingerprint != "" || got.State != tokens.IdemPending {
		t.Fatalf("pending record = %+v; want request req-1, no fingerprint yet", got)
	}
	rec.State, rec.Answer, rec.Fingerprint = tokens.IdemDone, answer, "fp-whole"
	if err := s.SettleKey(ctx(t), "r", "k", "c1", &rec); err != nil {
		t.Fatal(err)
	}
	if got, _ := mustClaim(t, s, "r", "k", pending("c2"), time.Hour); got.Request != "req-1" || got.Fingerprint != "fp-whole" || got.State != tokens.IdemDone {
		t.Fatalf("settled record = %+v; want request req-1, fingerprint fp-whole, done", got)
	}
}

func pending(claim string) tokens.IdemRecord {
	return tokens.IdemRecord{Fingerprint: "fp-" + claim, State: tokens.IdemPending, Claim: claim,
		ClaimedAt: time.Now().UTC().Truncate(time.Millisecond)}
}

func mustClaim(t *testing.T, s tokens.Store, res, key string, rec tokens.IdemRecord, ttl time.Duration) (tokens.IdemRecord, bool) {
	t.Helper()
	got, created, err := s.ClaimKey(ctx(t), res, key, rec, ttl)
	if err != nil {
		t.Fatalf("ClaimKey(%q, %q): %v", res, key, err)
	}
	return got, created
}

// claimAndSettle claims key on resource r as claim c1, then settles it in
// state with answer a.
func claimAndSettle(t *testing.T, s tokens.Store, key string, state tokens.IdemState, a *tokens.IdemAnswer) {
	t.Helper()
	mustClaim(t, s, "r", key, pending("c1"), time.Hour)
	rec := pending("c1")
	rec.State, rec.Answer = state, a
	if err := s.SettleKey(ctx(t), "r", key, "c1", &rec); err != nil {
		t.Fatal(err)
	}
}

// answer is an upstream answer with every kind of byte in its body.
var answer = &tokens.IdemAnswer{Status: 201, Header: map[string][]string{"Content-Type": {"application/json"}, "X-Id": {"a", "b"}},
	Body: append([]byte(`{"id":1001}`), 0, 0xff, '\n')}

func testClaimOnce(t *testing.T, f Factory) {
	s := f(t)
	first := pending("c1")
	if got, created := mustClaim(t, s, "r", "k", first, time.Hour); !created || got.Claim != "c1" {
		t.Fatalf("first claim = %+v, %t", got, created)
	}
	got, created := mustClaim(t, s, "r", "k", pending("c2"), time.Hour)
	if created || got.Claim != "c1" || got.Fingerprint != first.Fingerprint || got.State != tokens.IdemPending ||
		!got.ClaimedAt.Equal(first.ClaimedAt) {
		t.Fatalf("second claim = %+v, %t; want the first, pending", got, created)
	}
	// Keys are per resource.
	if _, created := mustClaim(t, s, "other", "k", pending("c3"), time.Hour); !created {
		t.Fatal("the same key on another resource was not claimed")
	}
}

func testSettleDone(t *testing.T, f Factory) {
	s := f(t)
	claimAndSettle(t, s, "k", tokens.IdemDone, answer)
	got, created := mustClaim(t, s, "r", "k", pending("c2"), time.Hour)
	if created || got.State != tokens.IdemDone || got.Answer == nil || got.Answer.Status != 201 ||
		!bytes.Equal(got.Answer.Body, answer.Body) || fmt.Sprint(got.Answer.Header) != fmt.Sprint(answer.Header) {
		t.Fatalf("claim after done = %+v (answer %+v), %t", got, got.Answer, created)
	}
	// Settled once: the claim cannot settle again.
	if err := s.SettleKey(ctx(t), "r", "k", "c1", nil); !errors.Is(err, tokens.ErrClaimLost) {
		t.Fatalf("second settle = %v, want ErrClaimLost", err)
	}
}

func testSettleUnknown(t *testing.T, f Factory) {
	s := f(t)
	claimAndSettle(t, s, "k", tokens.IdemUnknown, nil)
	if got, created := mustClaim(t, s, "r", "k", pending("c2"), time.Hour); created || got.State != tokens.IdemUnknown {
		t.Fatalf("claim after an unknown outcome = %+v, %t", got, created)
	}
}

func testForget(t *testing.T, f Factory) {
	s := f(t)
	mustClaim(t, s, "r", "k", pending("c1"), time.Hour)
	if err := s.SettleKey(ctx(t), "r", "k", "c1", nil); err != nil {
		t.Fatal(err)
	}
	if got, created := mustClaim(t, s, "r", "k", pending("c2"), time.Hour); !created || got.Claim != "c2" {
		t.Fatalf("claim after forget = %+v, %t; want it created", got, created)
	}
}

func testSettleLost(t *testing.T, f Factory) {
	s := f(t)
	mustClaim(t, s, "r", "k", pending("c1"), time.Hour)
	if err := s.SettleKey(ctx(t), "r", "k", "c2", nil); !errors.Is(err, tokens.ErrClaimLost) {
		t.Fatalf("settle by another claim = %v, want ErrClaimLost", err)
	}
	if err := s.SettleKey(ctx(t), "r", "never", "c1", nil); !errors.Is(err, tokens.ErrClaimLost) {
		t.Fatalf("settle of no record = %v, want ErrClaimLost", err)
	}
}

func testConcurrentClaims(t *testing.T, f Factory) {
	clients := []tokens.Store{f(t)}
	if !clients[0].Exclusive() {
		clients = append(clients, f(t), f(t))
	}
	var created atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := clients[i%len(clients)].ClaimKey(ctx(t), "r", "k", pending(fmt.Sprint("c", i)), time.Hour)
			if err != nil {
				t.Error(err)
			}
			if ok {
				created.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := created.Load(); n != 1 {
		t.Fatalf("%d of 30 concurrent claims through %d clients created the record, want 1", n, len(clients))
	}
}

func testIdemRestart(t *testing.T, f Factory) {
	s := f(t)
	claimAndSettle(t, s, "k", tokens.IdemDone, answer)
	mustClaim(t, s, "r", "pending", pending("c9"), time.Hour)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := f(t)
	if got, created := mustClaim(t, s2, "r", "k", pending("c2"), time.Hour); created || got.State != tokens.IdemDone ||
		!bytes.Equal(got.Answer.Body, answer.Body) {
		t.Fatalf("after a restart = %+v, %t", got, created)
	}
	if got, created := mustClaim(t, s2, "r", "pending", pending("c3"), time.Hour); created || got.Claim != "c9" {
		t.Fatalf("a pending claim after a restart = %+v, %t", got, created)
	}
}

func testIdemExpiry(t *testing.T, f Factory) {
	s := f(t)
	mustClaim(t, s, "r", "short", pending("c1"), time.Second)
	mustClaim(t, s, "r", "long", pending("c1"), time.Hour)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := s.PurgeKeys(ctx(t), 100); err != nil {
			t.Fatal(err)
		}
		if _, created := mustClaim(t, s, "r", "short", pending("c2"), time.Hour); created {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a 1s record still there after 20s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got, created := mustClaim(t, s, "r", "long", pending("c2"), time.Hour); created || got.Claim != "c1" {
		t.Fatalf("a live record after purges = %+v, %t", got, created)
	}
}

func testInvalidIdemKeys(t *testing.T, f Factory) {
	s := f(t)
	for _, k := range []string{"", string(make([]byte, 256)), "a\x00b", "é"} {
		if _, _, err := s.ClaimKey(ctx(t), "r", k, pending("c"), time.Hour); !errors.Is(err, tokens.ErrInvalidIdemKey) {
			t.Fatalf("ClaimKey(%q) = %v, want ErrInvalidIdemKey", k, err)
		}
	}
	if _, _, err := s.ClaimKey(ctx(t), "", "k", pending("c"), time.Hour); !errors.Is(err, tokens.ErrInvalidResource) {
		t.Fatalf("ClaimKey on no resource = %v", err)
	}
}

func testForgetKey(t *testing.T, f Factory) {
	s := f(t)
	claimAndSettle(t, s, "k", tokens.IdemUnknown, nil)
	if found, err := s.ForgetKey(ctx(t), "r", "k"); err != nil || !found {
		t.Fatalf("ForgetKey of an unknown outcome = %t, %v", found, err)
	}
	if _, created := mustClaim(t, s, "r", "k", pending("c2"), time.Hour); !created {
		t.Fatal("the key was not free after ForgetKey")
	}
	if found, err := s.ForgetKey(ctx(t), "r", "never"); err != nil || found {
		t.Fatalf("ForgetKey of no record = %t, %v", found, err)
	}
}
