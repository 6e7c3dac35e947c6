package wire_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fencegw/fencegw/wire"
)

// TestCheckText: every spelling encoding/json would silently read as
// U+FFFD is refused; U+FFFD itself, surrogate pairs and escapes that only
// look like \u are not.
func TestCheckText(t *testing.T) {
	for _, in := range []string{
		`{"holder":"node-\ud800"}`, `{"holder":"node-\udfff"}`, `{"holder":"node-\uDBFF"}`,
		"{\"holder\":\"node-\xff\"}", "{\"holder\":\"node-\xfe\"}", "{\"holder\":\"node-\xed\xa0\x80\"}",
		`{"holder":"\ud800\ud800"}`, `{"holder":"\ud800x"}`, `{"holder":"\ud800\n"}`, `{"holder":"\udc00\ud800"}`,
		`{"a":"\ud83d\ude00","holder":"\ude00"}`, "{\"holder\":\"ok\"} \xff", `{"h\ud800older":"x"}`,
	} {
		if err := wire.CheckText([]byte(in)); !errors.Is(err, wire.ErrText) {
			t.Errorf("CheckText(%q) = %v, want ErrText", in, err)
		}
	}
	for _, in := range []string{
		`{"holder":"node-\ufffd"}`, "{\"holder\":\"node-\xef\xbf\xbd\"}", `{"holder":"\ud83d\ude00"}`,
		`{"holder":"\\ud800"}`, `{"holder":"\\\ud83d\ude00"}`, `{"holder":"é\u00e9"}`, `{"holder":"\u12"}`, `\ud800`, ``,
	} {
		if err := wire.CheckText([]byte(in)); err != nil {
			t.Errorf("CheckText(%q) = %v, want nil", in, err)
		}
	}
}

// FuzzCheckText: whenever CheckText accepts a document that encoding/json
// decodes, every string in it decodes without U+FFFD unless the document
// spelled U+FFFD (as UTF-8 or as \ufffd): no other spelling aliases it.
func FuzzCheckText(f *testing.F) {
	for _, s := range []string{`{"holder":"node-\ud800"}`, `{"holder":"node-\udfff"}`, "{\"holder\":\"node-\xff\"}",
		`{"holder":"node-\ufffd"}`, `{"holder":"\ud83d\ude00"}`, `{"holder":"\\ud800"}`, `["\ud800\udc00", "\udc00"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if wire.CheckText([]byte(in)) != nil {
			if utf8.ValidString(in) && !strings.Contains(in, `\u`) && !strings.Contains(in, `\U`) {
				t.Fatalf("CheckText(%q) refused valid UTF-8 without escapes", in)
			}
			return
		}
		var v any
		if json.Unmarshal([]byte(in), &v) != nil {
			return
		}
		spelled := strings.Contains(in, "\ufffd") || strings.Contains(strings.ToLower(in), `\ufffd`)
		if !spelled && hasFFFD(v) {
			t.Fatalf("CheckText accepted %q, which decodes to U+FFFD", in)
		}
	})
}

// hasFFFD reports whether a decoded JSON value holds U+FFFD in any string.
func hasFFFD(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, utf8.RuneError)
	case []any:
		for _, e := range v {
			if hasFFFD(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, utf8.RuneError) || hasFFFD(e) {
				return true
			}
		}
	}
	return false
}
