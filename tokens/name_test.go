package tokens_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/fencegw/fencegw/tokens"
)

// TestValidateResourceLookAlikes: names that would look like another name on
// a page or in the audit — control, zero-width, bidirectional and
// byte-order-mark characters, text not in NFC — are refused; printable
// names, non-ASCII ones in NFC included, are accepted.
func TestValidateResourceLookAlikes(t *testing.T) {
	cases := []struct {
		name string
		in   string
		ok   bool
	}{
		{"ascii", "invoice-sweeper", true},
		{"inner space", "email tenant", true},
		{"non-ASCII NFC", "r\u00e9sum\u00e9-\u65e5\u672c", true},
		{"zero-width space", "invoice\u200bsweeper", false},
		{"right-to-left override", "invoice\u202eteews", false},
		{"NUL", "invoice\u0000", false},
		{"byte order mark", "\ufeffinvoice", false},
		{"combining accent (NFD)", "e\u0301", false},
		{"zero-width joiner", "a\u200db", false},
		{"left-to-right isolate", "a\u2066b", false},
		{"soft hyphen", "in\u00advoice", false},
		{"C1 control", "a\u0085b", false},
		{"no-break space", "a\u00a0b", false},
		{"DEL", "a\x7fb", false},
		{"invalid UTF-8", "a\xffb", false},
	}
	for _, c := range cases {
		err := tokens.ValidateResource(c.in)
		if c.ok && err != nil {
			t.Errorf("%s: ValidateResource(%q) = %v, want nil", c.name, c.in, err)
		}
		if !c.ok && !errors.Is(err, tokens.ErrInvalidResource) {
			t.Errorf("%s: ValidateResource(%q) = %v, want ErrInvalidResource", c.name, c.in, err)
		}
	}
}

// TestValidateResourceASCIIDoesNotAllocate keeps the hot path's check cheap.
func TestValidateResourceASCIIDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = tokens.ValidateResource("email:tenant-42") }); n != 0 {
		t.Fatalf("ValidateResource of an ASCII name allocates %v times", n)
	}
}

func BenchmarkValidateResource(b *testing.B) {
	for _, name := range []string{"email:tenant-42", "r\u00e9sum\u00e9-tenant-42"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				_ = tokens.ValidateResource(name)
			}
		})
	}
}

// FuzzValidateResource checks ValidateResource against the rule it states:
// it accepts a name exactly when it is 1 to MaxResourceLen bytes of valid
// UTF-8 in NFC, without Cc or Cf characters or spaces other than an inner
// ASCII space.
func FuzzValidateResource(f *testing.F) {
	for _, s := range []string{"a", "invoice-sweeper", " a", "a ", "a\u200bb", "a\u202eb", "\x00", "\ufeff", "e\u0301", "\u00e9", "\xff", "a\tb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := tokens.ValidateResource(s)
		if err != nil && !errors.Is(err, tokens.ErrInvalidResource) {
			t.Fatalf("ValidateResource(%q): error %v does not wrap ErrInvalidResource", s, err)
		}
		want := s != "" && len(s) <= tokens.MaxResourceLen && utf8.ValidString(s) && norm.NFC.IsNormalString(s) &&
			!strings.HasPrefix(s, " ") && !strings.HasSuffix(s, " ")
		for _, r := range s {
			if unicode.In(r, unicode.Cc, unicode.Cf) || (unicode.IsSpace(r) && r != ' ') {
				want = false
			}
		}
		if (err == nil) != want {
			t.Fatalf("ValidateResource(%q) = %v; the rule says valid=%v", s, err, want)
		}
	})
}

// TestTemplateTextMustFitAName: a route's resource template whose own text
// could never be part of a valid name is refused when parsed.
func TestTemplateTextMustFitAName(t *testing.T) {
	for _, ok := range []string{"invoice-sweeper", "tenant-{segment:1}", "{header:X-Tenant}", "r\u00e9sum\u00e9-{segment:2}"} {
		if _, err := tokens.ParseTemplate(ok); err != nil {
			t.Errorf("ParseTemplate(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"tenant-\u200b{segment:1}", "\u202e{segment:1}", "a\u0000", "\ufeffjobs", "e\u0301", " {segment:1}"} {
		if _, err := tokens.ParseTemplate(bad); !errors.Is(err, tokens.ErrInvalidResource) {
			t.Errorf("ParseTemplate(%q) = %v, want ErrInvalidResource", bad, err)
		}
	}
}
