package wire

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrText is wrapped by every error of CheckText.
var ErrText = errors.New("text that would be read as U+FFFD")

// CheckText checks that the JSON document b spells every character one
// way. encoding/json replaces each byte of invalid UTF-8 (0xff, a
// truncated sequence, an encoded surrogate) and each \u escape of a lone
// surrogate (\ud800 without a low surrogate after it, \udfff on its own)
// with U+FFFD, silently: "node-\ud800", "node-\udfff", "node-<0xff>" and
// "node-\ufffd" would all decode to one holder, and a caller could act on
// a lease under another's name. CheckText refuses, with an error wrapping
// ErrText and naming the offset, invalid UTF-8 anywhere in b and a lone
// surrogate escape in any string. A valid document is left alone, U+FFFD
// itself included; other malformations are left to the decoder.
func CheckText(b []byte) error {
	if !utf8.Valid(b) {
		i := invalidAt(b)
		return fmt.Errorf("%w: invalid UTF-8 at byte %d (0x%02x)", ErrText, i, b[i])
	}
	inString := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\' && i+1 < len(b) && b[i+1] == 'u':
			last, err := checkEscape(b, i)
			if err != nil {
				return err
			}
			i = last
		case c == '\\':
			i++ // past the escaped character, '"' and '\\' included
		}
	}
	return nil
}

// checkEscape checks the \u escape at b[i:] and returns the offset of its
// last byte that CheckText need not scan again: the end of a surrogate
// pair, or the 'u' (hex digits are plain characters). A high surrogate
// must be followed at once by an escaped low one; a low surrogate not so
// consumed is lone.
func checkEscape(b []byte, i int) (last int, err error) {
	r, ok := hex4(b, i+2)
	switch {
	case !ok || r < 0xd800 || r > 0xdfff:
		return i + 1, nil // not a surrogate, or malformed: the decoder says how
	case r >= 0xdc00:
		return 0, fmt.Errorf("%w: lone low surrogate \\u%04x at byte %d", ErrText, r, i)
	}
	if i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
		if lo, ok := hex4(b, i+8); ok && lo >= 0xdc00 && lo <= 0xdfff {
			return i + 11, nil
		}
	}
	return 0, fmt.Errorf("%w: high surrogate \\u%04x at byte %d without a low surrogate after it", ErrText, r, i)
}

// hex4 returns the value of the 4 hex digits at b[i:], or false.
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// invalidAt returns the offset of the first invalid UTF-8 sequence in b.
func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return 0
}
