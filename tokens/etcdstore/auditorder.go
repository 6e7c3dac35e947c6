package etcdstore

import (
	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcd applies a range read's limit only to a range read in ascending key
// order: sorted any other way, the server reads the whole range, sorts it
// and then truncates it. The audit lists its entries newest first, so its
// index keys end in the entry's ID inverted (auditInvertID), under which
// ascending key order is descending ID order: every read of the audit is
// an ascending range read with a limit.

// auditIDTime is the length of an ID's time part: the start of its
// interval in Unix milliseconds, 13 decimal digits (tokens.AuditID).
const auditIDTime = 13

// auditInvertID returns id with each decimal digit d of its time part
// replaced by 9-d and each hex digit h of its digest by 15-h (lowercase):
// over IDs of tokens.AuditID's form (lowercase hex) the inverse of ID
// order, and its own inverse. Other bytes are kept.
func auditInvertID(id string) string {
	b := []byte(id)
	for i, c := range b {
		switch {
		case i < auditIDTime && c >= '0' && c <= '9':
			b[i] = '9' - (c - '0')
		case i > auditIDTime && c >= '0' && c <= '9':
			b[i] = "fedcba9876543210"[c-'0']
		case i > auditIDTime && c >= 'a' && c <= 'f':
			b[i] = "543210"[c-'a']
		}
	}
	return string(b)
}

// canonicalAuditID reports whether id is of tokens.AuditID's form: 13
// decimal digits, a dash and 16 lowercase hex digits. Only such IDs are
// stored, so that auditInvertID orders them exactly.
func canonicalAuditID(id string) bool {
	if len(id) != auditIDTime+1+16 || id[auditIDTime] != '-' || !auditIDDigits(id) {
		return false
	}
	for _, c := range []byte(id[auditIDTime+1:]) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// auditIDDigits reports whether id begins with a time part: 13 decimal
// digits.
func auditIDDigits(id string) bool {
	if len(id) < auditIDTime {
		return false
	}
	for _, c := range []byte(id[:auditIDTime]) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// auditInvRange returns the range [from, to) of inverted index keys under
// ibase that holds every stored ID in [lo, hi) (tokens.AuditIDRange; each
// unbounded when empty), highest ID first. It is exact when hi is a
// stored ID (a cursor) or a time part and lo a time part, as AuditIDRange
// makes them; for any other bound it is wider, and the reader checks each
// ID against lo and hi (auditIDIn).
func auditInvRange(ibase, lo, hi string) (from, to string) {
	from, to = ibase, clientv3.GetPrefixRangeEnd(ibase)
	switch {
	case hi == "":
	case canonicalAuditID(hi):
		// IDs below hi: inverted, above hi's inverse.
		from = ibase + auditInvertID(hi) + "\x00"
	case len(hi) == auditIDTime && auditIDDigits(hi):
		// IDs whose time part is below hi: inverted, above every key
		// that begins with hi's inverse.
		from = clientv3.GetPrefixRangeEnd(ibase + auditInvertID(hi))
	case auditIDDigits(hi):
		// IDs below hi have a time part at most hi's.
		from = ibase + auditInvertID(hi[:auditIDTime])
	}
	if auditIDDigits(lo) {
		// IDs at or above lo have a time part at least lo's: inverted,
		// at most its inverse.
		to = clientv3.GetPrefixRangeEnd(ibase + auditInvertID(lo[:auditIDTime]))
	}
	return from, to
}

// auditIDIn reports whether id lies in [lo, hi) (each unbounded when
// empty), and whether an ID below it might (false once id is below lo:
// the inverted index lists lower IDs after it).
func auditIDIn(id, lo, hi string) (in, more bool) {
	if id < lo {
		return false, false
	}
	return hi == "" || id < hi, true
}
