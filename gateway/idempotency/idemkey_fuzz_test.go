package idempotency

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/tokens"
)

// FuzzParseIdemKey: parseIdemKey never panics; what it accepts is a valid
// key; a valid key is read back the same quoted as an sf-string, and bare
// when it needs no quoting; anything refused wraps ErrInvalidIdemKey.
func FuzzParseIdemKey(f *testing.F) {
	for _, s := range []string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, "invoice-1001", `"a\"b\\c"`, `"open`, `""`, "a b", `"x"y`, " k ", "\x00", `"\q"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		key, err := parseIdemKey([]string{v})
		if err != nil {
			if !errors.Is(err, tokens.ErrInvalidIdemKey) {
				t.Fatalf("parseIdemKey(%q) = %v, not ErrInvalidIdemKey", v, err)
			}
			return
		}
		if tokens.ValidateIdemKey(key) != nil {
			t.Fatalf("parseIdemKey(%q) accepted the invalid key %q", v, key)
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		if back, err := parseIdemKey([]string{quoted}); err != nil || back != key {
			t.Fatalf("key %q quoted as %q reads back %q, %v", key, quoted, back, err)
		}
		if !strings.ContainsAny(key, "\",\\ \t") {
			if back, err := parseIdemKey([]string{key}); err != nil || back != key {
				t.Fatalf("bare key %q reads back %q, %v", key, back, err)
			}
		}
	})
}
