package tokens_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/fencegw/fencegw/tokens"
)

func TestParseEpoch(t *testing.T) {
	good := map[string]int64{
		"1":                   1,
		"2":                   2,
		"10":                  10,
		"007":                 7,
		"9007199254740993":    9007199254740993, // 2^53+1: not representable as float64
		"9223372036854775807": 9223372036854775807,
	}
	for in, want := range good {
		got, err := tokens.ParseEpoch(in)
		if err != nil || got != want {
			t.Errorf("ParseEpoch(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := []string{
		"", "abc", "0", "00", "-3", "+3", "1e3", "1.0", " 1", "1 ", "0x10",
		"9223372036854775808", "99999999999999999999", "1_000", "١", "\x00",
		"123456789012345678901234567890123",
	}
	for _, in := range bad {
		if got, err := tokens.ParseEpoch(in); !errors.Is(err, tokens.ErrMalformedToken) {
			t.Errorf("ParseEpoch(%q) = %d, %v; want ErrMalformedToken", in, got, err)
		}
	}
}

func TestValidateResource(t *testing.T) {
	for _, ok := range []string{"invoice-sweeper", "email:tenant-42", "a b", "x/y", "ü"} {
		if err := tokens.ValidateResource(ok); err != nil {
			t.Errorf("ValidateResource(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a\tb", "a\nb", "\x7f", "\xff", string(make([]byte, 257))} {
		if err := tokens.ValidateResource(bad); !errors.Is(err, tokens.ErrInvalidResource) {
			t.Errorf("ValidateResource(%q) = %v, want ErrInvalidResource", bad, err)
		}
	}
}

// FuzzParseEpoch checks that ParseEpoch accepts exactly the canonical
// positive int64 decimals (leading zeros allowed) and nothing else.
func FuzzParseEpoch(f *testing.F) {
	for _, s := range []string{"1", "0", "-3", "1e3", "9223372036854775807", "9223372036854775808", "abc", " 7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := tokens.ParseEpoch(s)
		if err != nil {
			if !errors.Is(err, tokens.ErrMalformedToken) {
				t.Fatalf("ParseEpoch(%q): error %v does not wrap ErrMalformedToken", s, err)
			}
			return
		}
		if got <= 0 {
			t.Fatalf("ParseEpoch(%q) = %d, not positive", s, got)
		}
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				t.Fatalf("ParseEpoch(%q) accepted a non-digit", s)
			}
		}
		want, perr := strconv.ParseInt(s, 10, 64)
		if perr != nil || want != got {
			t.Fatalf("ParseEpoch(%q) = %d, strconv says %d, %v", s, got, want, perr)
		}
	})
}
