package server

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

// A test hook, for the fault suite's wall-clock jumps (Go reads the time
// through the vDSO, out of reach of faketime): when envTestClockFile names
// a file, the gateway's wall clock (tokens.Clock) is the host's moved by
// the offset the file holds, in nanoseconds as a decimal integer (negative
// jumps back), reread every testClockPoll. It is refused — New fails —
// unless envTestHooks is "1" as well, so that a stray variable cannot move
// a production gateway's clock. Not for production; not documented for
// users.
const (
	envTestClockFile = "FENCEGW_TEST_CLOCK_FILE"
	envTestHooks     = "FENCEGW_TEST_HOOKS"
	testClockPoll    = 10 * time.Millisecond
)

// newClock returns the wall clock New hands down: given when set, else
// the test hook's file clock when getenv asks for it, else the system
// clock. stop ends what it started (the file clock's reader); it is never
// nil.
func newClock(given tokens.Clock, getenv func(string) string, log *slog.Logger) (c tokens.Clock, stop func(), err error) {
	path := getenv(envTestClockFile)
	switch {
	case given != nil:
		return given, func() {}, nil
	case path == "":
		return tokens.SystemClock{}, func() {}, nil
	case getenv(envTestHooks) != "1":
		return nil, nil, fmt.Errorf("%s is a test hook: refused unless %s=1", envTestClockFile, envTestHooks)
	}
	fc := &fileClock{path: path, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	if err := fc.read(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", envTestClockFile, err)
	}
	log.Warn("test hook: the wall clock follows an offset file", slog.String("file", path))
	go fc.follow()
	return fc, fc.close, nil
}

// fileClock is an OffsetClock whose offset follows a file.
type fileClock struct {
	tokens.OffsetClock
	path       string
	log        *slog.Logger
	stop, done chan struct{}
	failing    bool // the last read failed (logged once)
}

// read sets the offset from the file.
func (c *fileClock) read() error {
	b, err := os.ReadFile(c.path)
	if err != nil {
		return err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return errors.New("empty offset file") // caught mid-write: keep the offset
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("offset file %s: %w", c.path, err)
	}
	if time.Duration(n) != c.Offset() {
		c.log.Warn("test hook: the wall clock jumps", slog.Duration("offset", time.Duration(n)),
			slog.Duration("jump", time.Duration(n)-c.Offset()))
	}
	c.Set(time.Duration(n))
	return nil
}

// follow rereads the file every testClockPoll until close.
func (c *fileClock) follow() {
	defer close(c.done)
	everyTick(c.stop, testClockPoll, func() bool {
		err := c.read()
		if err != nil && !c.failing {
			c.log.Warn("test hook: reading the clock offset failed; the offset stays", slog.String("error", err.Error()))
		}
		c.failing = err != nil
		return true
	})
}

func (c *fileClock) close() {
	close(c.stop)
	<-c.done
}
