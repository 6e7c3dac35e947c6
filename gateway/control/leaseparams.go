package control

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// seconds is a lease parameter in seconds, kept as the JSON number sent so
// that its resolution is checked on the decimal the client wrote, not on
// the nearest float64 ("1.00000000001" is not whole milliseconds, though
// its float64 nearly is).
type seconds struct{ literal string }

// UnmarshalJSON accepts a JSON number and nothing else (not a string).
func (s *seconds) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		return errors.New("want a number of seconds")
	}
	s.literal = string(b)
	return nil
}

// duration returns s as a duration from lo to hi in whole milliseconds
// (tokens.LeaseResolution), or a detail for a 400 that names field and
// the range it takes. Nothing is rounded: a value that is not exactly such
// a duration is refused.
func (s seconds) duration(field string, lo, hi time.Duration) (time.Duration, string) {
	bad := fmt.Sprintf("%s must be from %s to %s seconds in whole milliseconds (a multiple of 0.001), got %s",
		field, secondsText(lo), secondsText(hi), s.literal)
	f, err := strconv.ParseFloat(s.literal, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(f) {
		return 0, bad
	}
	if f < lo.Seconds() || f > hi.Seconds() || !wholeMillis(s.literal) {
		return 0, bad
	}
	// A multiple of 0.001 at most 86400: f*1000 is within rounding of an
	// integer well below 2^53, so Round finds it exactly.
	d := time.Duration(math.Round(f*1000)) * time.Millisecond
	if d < lo || d > hi {
		return 0, bad
	}
	return d, ""
}

// stepped is duration for a parameter that must also be a whole multiple
// of step (a store's TTL step, tokens.LeaseTTLRange); a step of
// tokens.LeaseResolution or less is duration's own. The detail of a value
// off the step names the range and the step, and says it is the store's.
func (s seconds) stepped(field string, lo, hi, step time.Duration) (time.Duration, string) {
	d, detail := s.duration(field, lo, hi)
	if step <= tokens.LeaseResolution || detail == "" && d%step == 0 {
		return d, detail
	}
	return 0, fmt.Sprintf("%s must be from %s to %s seconds in whole multiples of %s seconds on this store, got %s",
		field, secondsText(lo), secondsText(hi), secondsText(step), s.literal)
}

// secondsText writes d in seconds as the API takes them: "1", "0.5".
func secondsText(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// wholeMillis reports whether the JSON number literal is a whole number of
// thousandths, decided on its decimal digits: the significant digits
// (trailing zeros aside) must end at or above the third decimal place.
func wholeMillis(literal string) bool {
	mant, exp := literal, 0
	if i := strings.IndexAny(literal, "eE"); i >= 0 {
		mant = literal[:i]
		e := strings.TrimPrefix(literal[i+1:], "+")
		if len(e) > 8 { // beyond any duration: ParseFloat made it 0 or Inf
			return strings.Trim(mant, "-0.") == "" // 0e-99999999 is 0
		}
		n, err := strconv.Atoi(e)
		if err != nil {
			return false
		}
		exp = n
	}
	mant = strings.TrimPrefix(mant, "-")
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimRight(intPart+frac, "0")
	if strings.Trim(digits, "0") == "" {
		return true // zero
	}
	// The value is digits × 10^(exp - len(frac) + trailing zeros).
	scale := exp - len(frac) + (len(intPart) + len(frac) - len(digits))
	return scale >= -3
}
