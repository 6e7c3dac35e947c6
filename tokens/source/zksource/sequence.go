package zksource

import (
	"errors"
	"fmt"
	"math"
)

// seqLen is the length of the sequence suffix ZooKeeper appends to the name
// of a sequential node: the counter formatted as %010d.
const seqLen = 10

// ErrSequenceOverflow is wrapped by the error Current returns when a child
// of the election carries a sequence number no int32 counter gives in
// order: the parent's counter passed 2^31-1 and went negative, and the
// order of its children cannot be told.
var ErrSequenceOverflow = errors.New("sequence counter overflowed")

// sequence returns the sequence number of a sequential node's name: its
// last 10 characters, which must all be ASCII digits. ok is false for a
// name that does not end so (not a participant of the election). err wraps
// ErrSequenceOverflow when the name ends in '-' and 9 digits, or in 10
// digits above 2^31-1: the forms ZooKeeper gives a counter that
// overflowed (-1 is "-000000001", -2^31 is "-2147483648").
func sequence(name string) (seq int64, ok bool, err error) {
	if len(name) < seqLen {
		return 0, false, nil
	}
	suffix := name[len(name)-seqLen:]
	digits := suffix
	if suffix[0] == '-' {
		digits = suffix[1:]
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false, nil
		}
		n = n*10 + int64(c-'0')
	}
	if suffix[0] == '-' || n > math.MaxInt32 {
		return 0, false, fmt.Errorf("child %q: %w", name, ErrSequenceOverflow)
	}
	return n, true, nil
}

// lowest returns the child with the lowest sequence number among children
// (names, as ZooKeeper lists them), ignoring names without a sequence
// suffix; ok is false when no child has one. Two children with the same
// number (possible only after the parent was deleted and created again)
// are ordered by name, so the answer does not depend on the listing's
// order. err wraps ErrSequenceOverflow when any child carries an overflowed
// counter.
func lowest(children []string) (name string, ok bool, err error) {
	var best int64
	for _, c := range children {
		seq, isSeq, err := sequence(c)
		if err != nil {
			return "", false, err
		}
		if !isSeq {
			continue
		}
		if !ok || seq < best || (seq == best && c < name) {
			name, best, ok = c, seq, true
		}
	}
	return name, ok, nil
}
