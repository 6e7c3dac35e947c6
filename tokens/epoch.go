package tokens

import (
	"errors"
	"fmt"
	"strconv"
)

// MaxResourceLen is the longest resource name, in bytes, that fencegw accepts.
const MaxResourceLen = 256

// ParseEpoch parses a raw decimal epoch: one or more ASCII digits whose value
// is a positive int64. Signs, spaces, exponents, fractions and values above
// 2^63-1 are refused with an error wrapping ErrMalformedToken.
func ParseEpoch(s string) (int64, error) {
	v, err := ParseRawEpoch(s)
	if err == nil && v == 0 {
		return 0, fmt.Errorf("%w: epoch must be positive, got 0", ErrMalformedToken)
	}
	return v, err
}

// ParseRawEpoch parses an epoch a client presents on a raw route: as
// ParseEpoch, but 0 is accepted too. Only an epoch source whose first
// leader gets epoch 0 (a Kubernetes Lease's leaseTransitions) can vouch
// for it; Decide refuses 0 on a route without one.
func ParseRawEpoch(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty epoch", ErrMalformedToken)
	}
	if len(s) > 32 {
		return 0, fmt.Errorf("%w: epoch longer than 32 characters", ErrMalformedToken)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: epoch %q is not a decimal integer", ErrMalformedToken, s)
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("%w: epoch %q exceeds 9223372036854775807", ErrMalformedToken, s)
		}
		return 0, fmt.Errorf("%w: epoch %q: %w", ErrMalformedToken, s, err)
	}
	return v, nil
}

// ValidateEpoch reports whether epoch is a legal epoch: a positive int64.
func ValidateEpoch(epoch int64) error {
	if epoch <= 0 {
		return fmt.Errorf("%w: %d is not positive", ErrInvalidEpoch, epoch)
	}
	return nil
}

// ValidateAdvance checks the arguments of Store.Advance: a valid resource
// name and a positive epoch.
func ValidateAdvance(resource string, epoch int64) error {
	if err := ValidateResource(resource); err != nil {
		return err
	}
	return ValidateEpoch(epoch)
}
