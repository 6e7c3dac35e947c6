package tokens_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/fencegw/fencegw/tokens"
)

// zeroSource vouches for exactly one epoch, as an epoch source whose
// current leader holds it would.
type zeroSource struct{ epoch int64 }

func (z zeroSource) Check(_ context.Context, resource string, epoch int64) error {
	switch {
	case epoch < z.epoch:
		return &tokens.StaleEpochError{Resource: resource, Presented: epoch, Current: z.epoch}
	case epoch > z.epoch:
		return &tokens.EpochNotIssuedError{Resource: resource, Presented: epoch, Issued: z.epoch}
	}
	return nil
}

func decideWith(f *tokens.Fence, src tokens.EpochSource, resource, token string) (tokens.Admission, error) {
	return f.Decide(context.Background(), tokens.Presented{Tokens: []string{token}, Verifier: tokens.RawVerifier{},
		Resource: func() (string, error) { return resource, nil }, Source: src})
}

// TestRawEpochZero: a raw epoch 0 is malformed on a route without an epoch
// source; with one that vouches for it (a Kubernetes Lease's first leader),
// it is admitted while the HWM is 0, and refused as stale once a higher
// epoch was admitted, as any epoch below the HWM.
func TestRawEpochZero(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "exclusive", true: "shared"}[shared], func(t *testing.T) {
			f, _ := observedFence(t, shared)
			if _, err := decideWith(f, nil, "job", "0"); !errors.Is(err, tokens.ErrMalformedToken) {
				t.Fatalf("epoch 0 without a source = %v, want ErrMalformedToken", err)
			}
			for _, tok := range []string{"0", "00"} {
				if a, err := decideWith(f, zeroSource{0}, "job", tok); err != nil || a.Epoch != 0 {
					t.Fatalf("epoch %s vouched for = %+v, %v", tok, a, err)
				}
			}
			if _, err := decideWith(f, zeroSource{0}, "job", "1"); tokens.DecisionOf(err) != tokens.DecisionForbidden {
				t.Fatalf("epoch 1 above the source's 0 = %v, want not issued", err)
			}
			if _, err := decideWith(f, zeroSource{1}, "job", "1"); err != nil {
				t.Fatalf("epoch 1 after a takeover = %v", err)
			}
			var stale *tokens.StaleEpochError
			if _, err := decideWith(f, zeroSource{0}, "job", "0"); !errors.As(err, &stale) || stale.Current != 1 {
				t.Fatalf("epoch 0 below the HWM 1, though the source vouches = %v, want stale at 1", err)
			}
			if err := f.Admit(context.Background(), "job", 0); !errors.Is(err, tokens.ErrInvalidEpoch) {
				t.Fatalf("Admit(0) = %v, want ErrInvalidEpoch", err)
			}
		})
	}
}

// FuzzParseRawEpoch: ParseRawEpoch accepts exactly the decimal digit
// strings of an int64 at most 32 long, 0 included, and agrees with
// ParseEpoch on every positive one.
func FuzzParseRawEpoch(f *testing.F) {
	for _, s := range []string{"0", "00", "1", "-0", "+1", "9223372036854775807", "9223372036854775808", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := tokens.ParseRawEpoch(s)
		want, perr := strconv.ParseInt(s, 10, 64)
		digits := s != "" && len(s) <= 32
		for i := 0; i < len(s); i++ {
			digits = digits && s[i] >= '0' && s[i] <= '9'
		}
		switch {
		case err != nil && !errors.Is(err, tokens.ErrMalformedToken):
			t.Fatalf("ParseRawEpoch(%q): error %v does not wrap ErrMalformedToken", s, err)
		case err == nil && (!digits || perr != nil || got != want):
			t.Fatalf("ParseRawEpoch(%q) = %d; strconv says %d, %v", s, got, want, perr)
		case err != nil && digits && perr == nil:
			t.Fatalf("ParseRawEpoch(%q) = %v, want %d", s, err, want)
		}
		if p, perr2 := tokens.ParseEpoch(s); (perr2 == nil) != (err == nil && got > 0) || (perr2 == nil && p != got) {
			t.Fatalf("ParseEpoch(%q) = %d, %v; ParseRawEpoch = %d, %v", s, p, perr2, got, err)
		}
	})
}
