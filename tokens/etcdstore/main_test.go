package etcdstore_test

import (
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testleak"
)

// leakGrace is how long TestMain lets goroutines wind down before calling
// them leaked. A stopped embedded etcd member can take up to rafthttp's 5s
// connection read timeout to finish an in-flight peer HTTP request (its
// timeoutConn re-arms the read deadline that net/http sets to abort the
// connection's background read), so the peer connection's goroutines on both
// ends outlive Close by that much.
const leakGrace = 10 * time.Second

// TestMain fails the package's tests if any goroutine outlives them: every
// client and embedded etcd member they start must be closed. No goroutine is
// ignored; slow ones get leakGrace to finish.
func TestMain(m *testing.M) { testleak.Exit(m.Run(), leakGrace) }
