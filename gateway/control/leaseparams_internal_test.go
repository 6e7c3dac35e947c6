package control

import "testing"

// TestWholeMillis decides on the decimal digits sent, whatever float64
// makes of them, exponents of any size included.
func TestWholeMillis(t *testing.T) {
	for lit, want := range map[string]bool{
		"0": true, "-0": true, "0.000": true, "0e-99999999": true, "0.0e+99999999": true,
		"1": true, "15": true, "1.5": true, "1.001": true, "1.0010000": true, "86400": true,
		"1500e-3": true, "1.5e3": true, "2E0": true, "1e+2": true, "100e-5": true,
		"1.0005": false, "1.00000000001": false, "1e-4": false, "1e-99999999": false,
		"123456789e-9": false, "0.0001": false, "1e-9": false,
	} {
		if got := wholeMillis(lit); got != want {
			t.Errorf("wholeMillis(%q) = %v, want %v", lit, got, want)
		}
	}
}

// FuzzSeconds: whatever JSON number is sent, an accepted duration is in
// range, whole milliseconds, and within a millisecond of the number.
func FuzzSeconds(f *testing.F) {
	for _, s := range []string{"1", "1.001", "0.0005", "1e-99999999", "86400", "1e400", "-0", "3600.000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		var s seconds
		if s.UnmarshalJSON([]byte(lit)) != nil {
			return
		}
		d, detail := s.duration("x", 0, 86400e9)
		if detail != "" {
			return
		}
		if d < 0 || d > 86400e9 || d%1e6 != 0 {
			t.Fatalf("%q accepted as %s", lit, d)
		}
	})
}
