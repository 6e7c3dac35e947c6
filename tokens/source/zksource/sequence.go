package zksource

import "math"

// seqLen is the length of the sequence suffix ZooKeeper appends to the name
// of a sequential node: the counter formatted as %010d.
const seqLen = 10

// sequence returns the sequence number of a sequential node's name: its
// last 10 characters, which must all be ASCII digits and make a number
// from 0 to 2^31-1, the values ZooKeeper's int32 counter gives in order.
// ok is false for any other name: it is not a participant of the election.
// That includes the names no participant's create gives in order (10
// digits above 2^31-1, such as "zzz-9999999999") and the forms of an
// overflowed counter ("-000000001", "-2147483648"), so that such a child,
// which anyone allowed to create children can add, cannot make the whole
// election unreadable.
func sequence(name string) (seq int64, ok bool) {
	if len(name) < seqLen {
		return 0, false
	}
	suffix := name[len(name)-seqLen:]
	var n int64
	for i := 0; i < len(suffix); i++ {
		c := suffix[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if n > math.MaxInt32 {
		return 0, false
	}
	return n, true
}

// lowest returns the child with the lowest sequence number among children
// (names, as ZooKeeper lists them), ignoring names without a valid
// sequence suffix (see sequence); ok is false when no child has one. Two
// children with the same number (possible only after the parent was
// deleted and created again) are ordered by name, so the answer does not
// depend on the listing's order.
func lowest(children []string) (name string, ok bool) {
	var best int64
	for _, c := range children {
		seq, isSeq := sequence(c)
		if !isSeq {
			continue
		}
		if !ok || seq < best || (seq == best && c < name) {
			name, best, ok = c, seq, true
		}
	}
	return name, ok
}
