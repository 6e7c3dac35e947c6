package demo

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// narrator prints the story's lines, each stamped with the time since the
// story began. Lines come from several goroutines (the email API prints its
// own).
type narrator struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	quiet bool
}

func newNarrator(w io.Writer, quiet bool) *narrator {
	return &narrator{w: w, start: time.Now(), quiet: quiet}
}

// stamp formats a time since the start: t=1.2s.
func stamp(d time.Duration) string { return fmt.Sprintf("t=%.1fs", d.Seconds()) }

// at is the stamp of t.
func (n *narrator) at(t time.Time) string { return stamp(t.Sub(n.start)) }

// say prints one line of the narrative, unless quiet.
func (n *narrator) say(who, format string, args ...any) {
	if n.quiet {
		return
	}
	n.print(who, format, args...)
}

// print prints one line, quiet or not.
func (n *narrator) print(who, format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.w, "%-7s %-8s %s\n", n.at(time.Now()), who, fmt.Sprintf(format, args...))
}

// failure is the *Failure of step, now.
func (n *narrator) failure(step string, err error) *Failure {
	return &Failure{Step: step, At: time.Since(n.start), Err: err}
}
