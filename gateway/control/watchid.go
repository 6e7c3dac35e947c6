package control

import (
	"strconv"
	"strings"
)

// eventID is a lease watch event's id: the Seq of the store change it
// reports (tokens.LeaseChange) and, for what the gateway learns without a
// change, a step after it: 1 for the lapse (expired), 2 for the lock-delay
// that follows it. Ids of one lease rise with every event, whichever
// replica made the change; they read "Seq" or "Seq.step".
type eventID struct {
	seq  int64
	step int64
}

// Steps of the events that follow a change without one of their own.
const (
	stepExpired   = 1
	stepLockDelay = 2
)

func (e eventID) String() string {
	if e.step == 0 {
		return strconv.FormatInt(e.seq, 10)
	}
	return strconv.FormatInt(e.seq, 10) + "." + strconv.FormatInt(e.step, 10)
}

// after reports whether e comes after o.
func (e eventID) after(o eventID) bool {
	return e.seq > o.seq || (e.seq == o.seq && e.step > o.step)
}

// parseEventID reads a Last-Event-ID; ok is false for anything else (an
// id of an older gateway, or garbage), which resumes nothing.
func parseEventID(s string) (id eventID, ok bool) {
	seq, step, dotted := strings.Cut(s, ".")
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil || n <= 0 {
		return eventID{}, false
	}
	id.seq = n
	if dotted {
		m, err := strconv.ParseInt(step, 10, 64)
		if err != nil || m < stepExpired || m > stepLockDelay {
			return eventID{}, false
		}
		id.step = m
	}
	return id, true
}
