package testzk_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencegw/fencegw/internal/testutil/testzk"
)

// TestStopRestart: a stopped server refuses clients and a restarted one
// answers on the same address with its data.
func TestStopRestart(t *testing.T) {
	s := testzk.Start(t)
	c := s.Conn(t, 10*time.Second)
	if _, err := c.Create("/kept", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("Create: %v", err)
	}
	s.Stop()
	if testzk.Ruok(s.Addr()) {
		t.Fatal("a stopped server answers ruok")
	}
	if _, _, err := c.Get("/kept"); err == nil {
		t.Fatal("Get on a stopped server succeeded")
	}
	s.Restart()
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _, err := c.Get("/kept")
		if err == nil {
			if string(data) != "v" {
				t.Fatalf("after Restart /kept holds %q, want %q", data, "v")
			}
			break
		}
		if time.Now().After(deadline) || (!errors.Is(err, zk.ErrNoServer) && !errors.Is(err, zk.ErrConnectionClosed)) {
			t.Fatalf("Get after Restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.Stop()
	s.Stop() // stopping a stopped server does nothing
}

// TestPauseResume: a paused server answers nothing, and answers again once
// resumed.
func TestPauseResume(t *testing.T) {
	s := testzk.Start(t)
	s.Pause()
	if testzk.Ruok(s.Addr()) {
		t.Fatal("a paused server answered ruok")
	}
	s.Resume()
	deadline := time.Now().Add(10 * time.Second)
	for !testzk.Ruok(s.Addr()) {
		if time.Now().After(deadline) {
			t.Fatal("no answer to ruok 10 s after Resume")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
