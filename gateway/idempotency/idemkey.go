package idempotency

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fencegw/fencegw/tokens"
)

// KeyHeader carries a write's idempotency key
// (draft-ietf-httpapi-idempotency-key-header).
const KeyHeader = "Idempotency-Key"

// IdempotentReplayedHeader marks an answer replayed from the record of an
// earlier forward of the same key.
const IdempotentReplayedHeader = "Idempotent-Replayed"

// errNoIdemKey means the request carries no Idempotency-Key.
var errNoIdemKey = errors.New("no Idempotency-Key")

// parseIdemKey reads the Idempotency-Key field values of a request: one
// value, a structured-field string ("...", RFC 8941, as the draft
// specifies) or a bare token as many clients send, whose key ValidateIdemKey
// accepts. It returns errNoIdemKey when there is none, and an error wrapping
// tokens.ErrInvalidIdemKey otherwise.
func parseIdemKey(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", errNoIdemKey
	case 1:
	default:
		return "", fmt.Errorf("%w: %d Idempotency-Key fields, want one", tokens.ErrInvalidIdemKey, len(values))
	}
	v := strings.Trim(values[0], " \t")
	if strings.HasPrefix(v, `"`) {
		var ok bool
		if v, ok = unquoteSFString(v); !ok {
			return "", fmt.Errorf("%w: not a well-formed quoted string", tokens.ErrInvalidIdemKey)
		}
	} else if strings.ContainsAny(v, `",\`) {
		return "", fmt.Errorf("%w: a bare key holds no quote, comma or backslash", tokens.ErrInvalidIdemKey)
	}
	if err := tokens.ValidateIdemKey(v); err != nil {
		return "", err
	}
	return v, nil
}

// unquoteSFString decodes an RFC 8941 sf-string: DQUOTE, then printable
// ASCII where only \" and \\ escape, then DQUOTE, nothing after.
func unquoteSFString(s string) (string, bool) {
	if len(s) < 2 || s[0] != '"' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
			if i == len(s) || (s[i] != '"' && s[i] != '\\') {
				return "", false
			}
			b.WriteByte(s[i])
		case c == '"':
			return b.String(), i == len(s)-1
		case c < 0x20 || c > 0x7e:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}
