package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/internal/testutil/testredis"
	"github.com/fencegw/fencegw/tokens"
)

// TestOpenRedisSource: a redis epoch_source opens on its address and key,
// and the route's checks read the lock; a replica is refused at open with
// an error naming the field.
func TestOpenRedisSource(t *testing.T) {
	srv := testredis.Start(t)
	c := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	epoch, err := c.Incr(ctx, "locks:report:epoch").Result()
	if err != nil {
		t.Fatalf("INCR: %v", err)
	}
	if ok, err := c.SetNX(ctx, "locks:report", epoch, time.Minute).Result(); err != nil || !ok {
		t.Fatalf("SET NX = %v, %v", ok, err)
	}

	set := &sourceSet{timeout: 2 * time.Second}
	defer set.Close()
	const field = "routes[0].epoch_source"
	src, err := set.open(field, &config.EpochSource{Kind: "redis", Address: srv.URL(), Key: "locks:{resource}"})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := src.Check(ctx, "report", epoch); err != nil {
		t.Fatalf("Check of the lock's epoch: %v", err)
	}
	var stale *tokens.StaleEpochError
	if err := src.Check(ctx, "report", epoch-1); !errors.As(err, &stale) || stale.Current != epoch {
		t.Fatalf("Check of a lower epoch = %v, want a stale epoch below %d", err, epoch)
	}

	if err := c.Do(ctx, "REPLICAOF", "127.0.0.1", "1").Err(); err != nil {
		t.Fatalf("REPLICAOF: %v", err)
	}
	defer c.Do(context.Background(), "REPLICAOF", "NO", "ONE")
	if _, err := set.open(field, &config.EpochSource{Kind: "redis", Address: srv.Addr()}); err == nil ||
		!strings.HasPrefix(err.Error(), field+": redissource: ") || !strings.Contains(err.Error(), "replica") {
		t.Fatalf("open on a replica = %v, want an error naming %s", err, field)
	}
}
