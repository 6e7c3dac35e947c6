package server

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/tokens"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestNewClockTestHook(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	path := filepath.Join(t.TempDir(), "offset")
	if err := os.WriteFile(path, []byte("0\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Without the hook: the system clock.
	c, stop, err := newClock(nil, env(nil), log)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, ok := c.(tokens.SystemClock); !ok {
		t.Errorf("no hook: got %T, want the system clock", c)
	}
	// A given clock wins.
	given := &tokens.OffsetClock{}
	if c, stop, err = newClock(given, env(map[string]string{envTestClockFile: path, envTestHooks: "1"}), log); err != nil || c != given {
		t.Errorf("given clock: got %v, %v", c, err)
	}
	stop()
	// The file alone is refused, naming both variables.
	_, _, err = newClock(nil, env(map[string]string{envTestClockFile: path}), log)
	if err == nil || !strings.Contains(err.Error(), envTestClockFile) || !strings.Contains(err.Error(), envTestHooks) {
		t.Errorf("file without the test flag: err = %v, want a refusal naming both variables", err)
	}
	// A missing file fails at start.
	missing := env(map[string]string{envTestClockFile: path + ".missing", envTestHooks: "1"})
	if _, _, err := newClock(nil, missing, log); err == nil {
		t.Error("a missing offset file was accepted")
	}
}

func TestFileClockFollowsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offset")
	if err := os.WriteFile(path, []byte("0"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, stop, err := newClock(nil, env(map[string]string{envTestClockFile: path, envTestHooks: "1"}), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	follows := func(want time.Duration) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for d := time.Until(c.Now()); d < want-time.Minute || d > want+time.Minute; d = time.Until(c.Now()) {
			if time.Now().After(deadline) {
				t.Fatalf("offset %s not followed: the clock is %s from the host's", want, d)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for _, jump := range []time.Duration{time.Hour, -time.Hour, 0, 10 * time.Hour} {
		if err := os.WriteFile(path, []byte(strconv.FormatInt(int64(jump), 10)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		follows(jump)
	}
	// Garbage (or a file caught mid-write) keeps the offset.
	if err := os.WriteFile(path, []byte("ten hours"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * testClockPoll)
	follows(10 * time.Hour)
}
