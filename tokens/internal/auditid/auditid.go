// Package auditid orders audit IDs (tokens.AuditID) for a store whose
// efficient range reads run in ascending key order only, such as etcd: it
// inverts IDs so that ascending order is newest first, and maps ID ranges
// onto the inverted keys.
package auditid

import (
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Why: etcd applies a range read's limit only to a range read in ascending key
// order: sorted any other way, the server reads the whole range, sorts it
// and then truncates it. The audit lists its entries newest first, so its
// index keys end in the entry's ID inverted (Invert), under which
// ascending key order is descending ID order: every read of the audit is
// an ascending range read with a limit.

// TimeDigits is the length of an ID's time part: the start of its
// interval in Unix milliseconds, 13 decimal digits (tokens.AuditID).
const TimeDigits = 13

// Invert returns id with each decimal digit d of its time part
// replaced by 9-d and each hex digit h of its digest by 15-h (lowercase):
// over IDs of tokens.AuditID's form (lowercase hex) the inverse of ID
// order, and its own inverse. Other bytes are kept.
func Invert(id string) string {
	b := []byte(id)
	for i, c := range b {
		switch {
		case i < TimeDigits && c >= '0' && c <= '9':
			b[i] = '9' - (c - '0')
		case i > TimeDigits && c >= '0' && c <= '9':
			b[i] = "fedcba9876543210"[c-'0']
		case i > TimeDigits && c >= 'a' && c <= 'f':
			b[i] = "543210"[c-'a']
		}
	}
	return string(b)
}

// Canonical reports whether id is of tokens.AuditID's form: 13
// decimal digits, a dash and 16 lowercase hex digits. Only such IDs are
// stored, so that Invert orders them exactly.
func Canonical(id string) bool {
	if len(id) != TimeDigits+1+16 || id[TimeDigits] != '-' || !HasTimePart(id) {
		return false
	}
	for _, c := range []byte(id[TimeDigits+1:]) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// HasTimePart reports whether id begins with a time part: 13 decimal
// digits.
func HasTimePart(id string) bool {
	if len(id) < TimeDigits {
		return false
	}
	for _, c := range []byte(id[:TimeDigits]) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// InvertedRange returns the range [from, to) of inverted index keys under
// ibase that holds every stored ID in [lo, hi) (tokens.AuditIDRange; each
// unbounded when empty), highest ID first. It is exact when hi is a
// stored ID (a cursor) or a time part and lo a time part, as AuditIDRange
// makes them; for any other bound it is wider, and the reader checks each
// ID against lo and hi (In).
func InvertedRange(ibase, lo, hi string) (from, to string) {
	from, to = ibase, clientv3.GetPrefixRangeEnd(ibase)
	switch {
	case hi == "":
	case Canonical(hi):
		// IDs below hi: inverted, above hi's inverse.
		from = ibase + Invert(hi) + "\x00"
	case len(hi) == TimeDigits && HasTimePart(hi):
		// IDs whose time part is below hi: inverted, above every key
		// that begins with hi's inverse.
		from = clientv3.GetPrefixRangeEnd(ibase + Invert(hi))
	case HasTimePart(hi):
		// IDs below hi have a time part at most hi's.
		from = ibase + Invert(hi[:TimeDigits])
	}
	if HasTimePart(lo) {
		// IDs at or above lo have a time part at least lo's: inverted,
		// at most its inverse.
		to = clientv3.GetPrefixRangeEnd(ibase + Invert(lo[:TimeDigits]))
	}
	return from, to
}

// In reports whether id lies in [lo, hi) (each unbounded when
// empty), and whether an ID below it might (false once id is below lo:
// the inverted index lists lower IDs after it).
func In(id, lo, hi string) (in, more bool) {
	if id < lo {
		return false, false
	}
	return hi == "" || id < hi, true
}
