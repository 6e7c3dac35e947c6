package zksource_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/fencegw/fencegw/internal/testutil/testzk"
	"github.com/fencegw/fencegw/tokens/source"
	"github.com/fencegw/fencegw/tokens/source/sourcetest"
	"github.com/fencegw/fencegw/tokens/source/zksource"
)

// TestJunkChildren: the red team's probe. Persistent children whose
// suffix no in-order ZooKeeper counter gives (10 digits beyond int32, or
// '-' and 9 digits) are not participants: the leader still leads and is
// admitted, rather than every write to the election failing closed.
func TestJunkChildren(t *testing.T) {
	srv := testzk.Start(t)
	const election = "/election/report"
	src := open(t, srv, zksource.Options{Path: election})
	c := srv.Conn(t, 30*time.Second)
	_, e := join(t, c, election, "node-a")
	for _, name := range []string{"zzz-9999999999", "lock--000000001", "x-2147483648", "no-sequence", "x-00000000a1"} {
		if _, err := c.Create(election+"/"+name, []byte("junk"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("Create %s: %v", name, err)
		}
	}
	sourcetest.MustLeader(t, src, "report", source.Leader{Held: true, Epoch: e, Holder: "node-a", Live: true})
	sourcetest.MustCheck(t, src, "report", e, sourcetest.Admit)
}
