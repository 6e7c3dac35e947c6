// Package testleak fails a test binary whose goroutines outlive its tests,
// giving slow background goroutines (closed connections, stopped servers)
// a grace period instead of ignoring any of them.
package testleak

import (
	"fmt"
	"os"
	"time"

	"go.uber.org/goleak"
)

// Wait returns nil once no goroutine but the test runner's is left, or the
// last leak report after grace has passed. With grace 0 it checks once
// (goleak's own short retries only).
func Wait(grace time.Duration) error {
	deadline := time.Now().Add(grace)
	for {
		err := goleak.Find()
		if err == nil || !time.Now().Before(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Exit is the end of a TestMain: when the tests passed (code 0) it waits up
// to grace for leaked goroutines and turns a leak into a failure, then exits.
func Exit(code int, grace time.Duration) {
	if code == 0 {
		if err := Wait(grace); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines still running %v after the tests: %v\n", grace, err)
			code = 1
		}
	}
	os.Exit(code)
}
