package etcdstore

import (
	"errors"
	"strconv"
	"testing"

	"github.com/fencegw/fencegw/tokens"
)

func TestDecodeEpoch(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64 // 0: corrupt
	}{
		{"1", 1},
		{"10", 10},
		{"9223372036854775807", 9223372036854775807},
		{"", 0},
		{"0", 0},
		{"-1", 0},
		{"+1", 0},
		{"abc", 0},
		{" 1", 0},
		{"1\n", 0},
		{"1e3", 0},
		{"9223372036854775808", 0},
		{"99999999999999999999999999999999999", 0},
	} {
		got, err := decodeEpoch("/k", []byte(tc.in))
		if tc.want == 0 {
			if err == nil || !errors.Is(err, ErrCorruptValue) || got != 0 {
				t.Errorf("decodeEpoch(%q) = %d, %v; want ErrCorruptValue", tc.in, got, err)
			}
			if errors.Is(err, tokens.ErrMalformedToken) {
				t.Errorf("decodeEpoch(%q) error matches ErrMalformedToken: %v", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("decodeEpoch(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

// FuzzDecodeEpoch checks that a stored value decodes to a positive int64
// equal to its integer value, or is refused as corrupt; never 0, never a
// panic, and that encoding round-trips.
func FuzzDecodeEpoch(f *testing.F) {
	for _, s := range []string{"1", "10", "9", "010", "0", "-1", "abc", "", "9223372036854775807", "9223372036854775808", "1e3", "٣"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		got, err := decodeEpoch("/k", value)
		if err != nil {
			if got != 0 || !errors.Is(err, ErrCorruptValue) || errors.Is(err, tokens.ErrMalformedToken) {
				t.Fatalf("decodeEpoch(%q) = %d, %v", value, got, err)
			}
			return
		}
		if got <= 0 {
			t.Fatalf("decodeEpoch(%q) = %d without error", value, got)
		}
		for _, c := range value {
			if c < '0' || c > '9' {
				t.Fatalf("decodeEpoch(%q) accepted a non-digit", value)
			}
		}
		if n, perr := strconv.ParseInt(string(value), 10, 64); perr != nil || n != got {
			t.Fatalf("decodeEpoch(%q) = %d, strconv says %d, %v", value, got, n, perr)
		}
		back, err := decodeEpoch("/k", []byte(encodeEpoch(got)))
		if err != nil || back != got {
			t.Fatalf("round trip of %d: %d, %v", got, back, err)
		}
	})
}
