package testleak_test

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testleak"
)

func TestWaitSeesALeakAndItsEnd(t *testing.T) {
	stop := make(chan struct{})
	go func() { <-stop }()
	if err := testleak.Wait(100 * time.Millisecond); err == nil {
		t.Fatal("a blocked goroutine was not reported")
	}
	close(stop)
	if err := testleak.Wait(5 * time.Second); err != nil {
		t.Fatalf("after it ended: %v", err)
	}
}
