package etcdsource_test

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testleak"
)

// TestMain fails the tests if goroutines outlive them: every client, session
// and embedded etcd member they start must be closed. A stopped member can
// take up to rafthttp's 5 s connection read timeout to finish an in-flight
// peer request (see tokens/etcdstore/main_test.go), hence the grace.
func TestMain(m *testing.M) { testleak.Exit(m.Run(), 10*time.Second) }
