package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Epoch is a fencing epoch as JSON carries it. Epochs are unsigned 64-bit
// integers in format; fencegw's stores keep them from 0 to MaxEpoch (the
// range of PostgreSQL's bigint and of etcd's revisions).
//
// An Epoch marshals to a JSON string of decimal digits ("42"), in the
// manner of the protobuf JSON mapping for 64-bit integers, so that a reader
// whose numbers are IEEE doubles (JavaScript's JSON.parse) reads every
// epoch exactly; 9007199254740993 is not a double. It unmarshals from
// such a string or from a JSON number of decimal digits, so that clients
// that send numbers keep working. JSON null leaves it unchanged.
type Epoch int64

// MaxEpoch is the highest epoch fencegw keeps: 2^63-1.
const MaxEpoch = math.MaxInt64

// ErrEpoch is wrapped by every error of Epoch.UnmarshalJSON and ParseEpoch.
var ErrEpoch = errors.New("an epoch is a decimal integer from 0 to 9223372036854775807")

// MarshalJSON encodes e as a JSON string of its decimal digits.
func (e Epoch) MarshalJSON() ([]byte, error) {
	if e < 0 {
		return nil, fmt.Errorf("%w: got %d", ErrEpoch, int64(e))
	}
	b := make([]byte, 0, 21)
	b = append(b, '"')
	b = strconv.AppendInt(b, int64(e), 10)
	return append(b, '"'), nil
}

// UnmarshalJSON decodes a JSON string (escapes decoded) or number holding
// only decimal digits (no sign, fraction, exponent or spaces) whose value
// is at most MaxEpoch. Anything else is an error wrapping ErrEpoch.
func (e *Epoch) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		// A JSON string: its escapes ("\u0037") are decoded first.
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("%w: %w", ErrEpoch, err)
		}
	}
	v, err := ParseEpoch(s)
	if err != nil {
		return err
	}
	*e = v
	return nil
}

// ParseEpoch parses one or more decimal digits (leading zeros allowed)
// into an Epoch of at most MaxEpoch.
func ParseEpoch(s string) (Epoch, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: got %.40q", ErrEpoch, s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: got %.40q", ErrEpoch, s)
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: got %.40q", ErrEpoch, s)
	}
	return Epoch(v), nil
}

// String returns e's decimal digits.
func (e Epoch) String() string { return strconv.FormatInt(int64(e), 10) }

// EpochOf returns a pointer to e as an Epoch, for optional members.
func EpochOf(e int64) *Epoch {
	w := Epoch(e)
	return &w
}
