package wire_test

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/wire"
)

func TestEpochJSON(t *testing.T) {
	out, err := json.Marshal(struct {
		E wire.Epoch  `json:"e"`
		P *wire.Epoch `json:"p,omitempty"`
	}{9007199254740993, wire.EpochOf(wire.MaxEpoch)})
	if err != nil || string(out) != `{"e":"9007199254740993","p":"9223372036854775807"}` {
		t.Fatalf("marshal = %s, %v", out, err)
	}
	for in, want := range map[string]wire.Epoch{
		`"9007199254740993"`: 9007199254740993, `9007199254740993`: 9007199254740993,
		`"0"`: 0, `0`: 0, `"007"`: 7, `"9223372036854775807"`: wire.MaxEpoch,
	} {
		var e wire.Epoch
		if err := json.Unmarshal([]byte(in), &e); err != nil || e != want {
			t.Errorf("unmarshal %s = %d, %v; want %d", in, e, err, want)
		}
	}
	for _, in := range []string{`""`, `"-1"`, `-1`, `"+1"`, `1.0`, `1e3`, `"1e3"`, `" 1"`, `"1 "`, `"0x10"`,
		`"9223372036854775808"`, `18446744073709551615`, `true`, `{}`, `[]`, `"١"`} {
		var e wire.Epoch
		err := json.Unmarshal([]byte(in), &e)
		if err == nil || !errors.Is(err, wire.ErrEpoch) && !strings.Contains(err.Error(), "invalid") {
			t.Errorf("unmarshal %s = %d, %v; want an error", in, e, err)
		}
	}
	var p *wire.Epoch
	if err := json.Unmarshal([]byte(`null`), &p); err != nil || p != nil {
		t.Errorf("null = %v, %v", p, err)
	}
	if _, err := json.Marshal(wire.Epoch(-1)); err == nil {
		t.Error("a negative epoch marshalled")
	}
}

// FuzzEpochJSON: an Epoch decodes exactly the JSON strings and numbers of
// decimal digits whose value is at most MaxEpoch, to that value, and
// encodes back to the canonical string.
func FuzzEpochJSON(f *testing.F) {
	for _, s := range []string{`"9007199254740993"`, `9007199254740993`, `"0"`, `"-0"`, `"9223372036854775808"`,
		`1e3`, `"0009"`, `null`, `"\u0031"`, `""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var e wire.Epoch
		err := json.Unmarshal([]byte(in), &e)
		in = strings.Trim(in, " \t\r\n") // JSON's white space around a value
		var digits string
		ok := false
		if strings.HasPrefix(in, `"`) {
			ok = json.Unmarshal([]byte(in), &digits) == nil
		} else if !strings.HasPrefix(in, `"`) {
			digits, ok = in, in == "0" || !strings.HasPrefix(in, "0") // JSON numbers have no leading zeros
		}
		want, valid := new(big.Int), ok && digits != "" && strings.Trim(digits, "0123456789") == ""
		if valid {
			want.SetString(digits, 10)
			valid = want.IsInt64()
		}
		if in == "null" {
			valid, want = true, big.NewInt(0)
		}
		if valid != (err == nil) || valid && e != wire.Epoch(want.Int64()) {
			t.Fatalf("unmarshal %q = %d, %v; want valid=%v %v", in, e, err, valid, want)
		}
		if err != nil {
			return
		}
		out, err := json.Marshal(e)
		if err != nil || string(out) != `"`+want.String()+`"` {
			t.Fatalf("marshal %d = %s, %v", e, out, err)
		}
	})
}
