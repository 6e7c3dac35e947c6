package tokens

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// ValidateResource reports whether name is a legal name for a resource, a
// lease or a holder; every name the data plane, the control API and the
// stores accept passes through it. A legal name is 1 to MaxResourceLen
// bytes of valid UTF-8 in Unicode normalization form C, holding no control
// character (category Cc), no format character (category Cf: zero-width
// characters, bidirectional overrides and isolates, the byte order mark)
// and no space other than the ASCII space, which may not start or end it
// (a header value loses its outer spaces in transit, so the upstream would
// read another name in Fencing-Resource). So two names that look the same
// on a page or in the audit are the same name. Its error wraps
// ErrInvalidResource.
//
// A name of printable ASCII is checked in one pass over its bytes, with no
// allocation; only other names pay for the Unicode checks.
func ValidateResource(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty name", ErrInvalidResource)
	}
	if len(name) > MaxResourceLen {
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidResource, MaxResourceLen)
	}
	if name[0] == ' ' || name[len(name)-1] == ' ' {
		return fmt.Errorf("%w: starts or ends with a space", ErrInvalidResource)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c >= 0x7f {
			return validateUnicodeName(name)
		}
	}
	return nil
}

// validateUnicodeName is ValidateResource's check of a name that is not
// all printable ASCII.
func validateUnicodeName(name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidResource)
	}
	for _, r := range name {
		switch {
		case unicode.IsControl(r) || (unicode.IsSpace(r) && r != ' '):
			return fmt.Errorf("%w: contains control or space character %U", ErrInvalidResource, r)
		case unicode.Is(unicode.Cf, r):
			return fmt.Errorf("%w: contains invisible format character %U (zero-width or bidirectional control)",
				ErrInvalidResource, r)
		}
	}
	if !norm.NFC.IsNormalString(name) {
		return fmt.Errorf("%w: not in Unicode normalization form C (NFC); send %q", ErrInvalidResource, norm.NFC.String(name))
	}
	return nil
}
