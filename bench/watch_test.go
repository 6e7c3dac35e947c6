package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/internal/testutil/testpg"
)

// watchRenew is how often the watched lease is renewed while the writes
// run: every renewal is an event to every watcher.
var watchRenew = flag.Duration("watch-renew", 2*time.Second, "how often BenchmarkWatch renews the watched lease (each renewal: an event to every watcher)")

// BenchmarkWatch measures what lease watchers cost a gateway, as
// docs/performance.md "Lease watchers" reports: on PostgreSQL, the admitted writes of a run
// with 1,000 watchers of one lease (renewed every -watch-renew, the
// Kubernetes retry period by default, so events flow to all of them)
// against the same run without watchers; on etcd, the store calls
// around a lease's expiry with 200 watchers against 3. It needs neither
// wrk nor nginx: the load, the upstream and the watchers are this process.
//
//	go test -run '^$' -bench Watch -benchtime 1x ./bench
func BenchmarkWatch(b *testing.B) {
	if b.N > 1 {
		b.Skip("one iteration is the whole measurement: run with -benchtime 1x")
	}
	dir := b.TempDir()
	cpuProxy := 0
	if runtime.NumCPU() < 2 {
		cpuProxy = -1
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
	}))
	b.Cleanup(up.Close)
	bin := goBuild(b, dir, "github.com/fencegw/fencegw/cmd/fencegw")

	pg := startGateway(b, dir, bin, "postgres", testpg.Shared(b).NewDatabase(b), up.URL, cpuProxy)
	pg.write(b, "/raw/send", "1", 202)
	var without, with []float64
	for range *rounds { // interleaved, medians reported
		without = append(without, writesWhileWatched(b, pg, 0))
		with = append(with, writesWhileWatched(b, pg, 1000))
	}
	w0, w1 := medianOf(without), medianOf(with)
	fmt.Printf("\nPostgreSQL, admitted writes per second (median of %d runs of %s, the lease renewed every %s): no watchers %.0f, 1,000 watchers of one lease %.0f: %.2fx\n",
		*rounds, *duration, *watchRenew, w0, w1, w1/w0)

	etcd := startGateway(b, dir, bin, "etcd", "etcd://"+strings.Join(testetcd.Start(b, 1).Endpoints(), ","), up.URL, cpuProxy)
	few := callsAroundExpiry(b, etcd, "expiring-few", 3)
	many := callsAroundExpiry(b, etcd, "expiring-many", 200)
	fmt.Printf("etcd, store calls from a grant (TTL 2 s) to 1 s after its expiry: 3 watchers %d, 200 watchers %d\n", few, many)
	if many > few {
		b.Errorf("200 watchers made %d store calls, 3 watchers %d: the fan-out is not coalesced", many, few)
	}
}

// writesWhileWatched runs the write load for -duration against /raw/ with
// n watchers of the lease "watched", which is renewed every -watch-renew
// meanwhile, and returns the admitted writes per second.
func writesWhileWatched(b *testing.B, g *gateway, n int) float64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	epoch := acquireLease(b, g, "watched", 60)
	var events atomic.Int64
	openWatchers(b, ctx, g, "watched", n, func(line string) {
		if strings.HasPrefix(line, "event: renewed") {
			events.Add(1)
		}
	})
	go func() { // the lease changes all along
		body := fmt.Sprintf(`{"holder":"bench","epoch":%d}`, epoch)
		for ctx.Err() == nil {
			if resp, err := http.Post(g.api+"/v1/leases/watched/renew", "application/json", strings.NewReader(body)); err == nil {
				resp.Body.Close()
			}
			time.Sleep(*watchRenew)
		}
	}()
	time.Sleep(500 * time.Millisecond)
	var admitted atomic.Int64
	deadline := time.Now().Add(*duration)
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conns}}
	for range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				req, _ := http.NewRequest(http.MethodPost, g.proxy+"/raw/send", strings.NewReader(body))
				req.Header.Set("Fencing-Token", "1")
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusAccepted {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	client.CloseIdleConnections()
	if n > 0 && events.Load() == 0 {
		b.Fatalf("%d watchers received no renewal", n)
	}
	return float64(admitted.Load()) / duration.Seconds()
}

// callsAroundExpiry opens n watchers of name, grants it for 2 s and
// returns the store calls the gateway made from the grant to 1 s after
// every watcher saw it expire.
func callsAroundExpiry(b *testing.B, g *gateway, name string, n int) int64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var expired sync.WaitGroup
	expired.Add(n)
	openWatchers(b, ctx, g, name, n, func(line string) {
		if strings.HasPrefix(line, "event: expired") {
			expired.Done()
		}
	})
	time.Sleep(500 * time.Millisecond)
	before := g.storeCalls(b)
	acquireLease(b, g, name, 2)
	done := make(chan struct{})
	go func() { expired.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		b.Fatalf("not every watcher of %s saw it expire", name)
	}
	time.Sleep(time.Second)
	return g.storeCalls(b) - before
}

// openWatchers opens n watches of name, each read by a goroutine that
// hands every line to seen (n=0: none), until ctx ends.
func openWatchers(b *testing.B, ctx context.Context, g *gateway, name string, n int, seen func(string)) {
	var mu sync.Mutex
	for range n {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.api+"/v1/leases/"+name+"/watch", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("watch %s: %d", name, resp.StatusCode)
		}
		go func() {
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				mu.Lock()
				seen(sc.Text())
				mu.Unlock()
			}
		}()
	}
}

// acquireLease grants name to "bench" for ttl seconds and returns the
// epoch.
func acquireLease(b *testing.B, g *gateway, name string, ttl int) int64 {
	resp, err := http.Post(g.api+"/v1/leases/"+name+"/acquire", "application/json",
		strings.NewReader(fmt.Sprintf(`{"holder":"bench","ttl_seconds":%d}`, ttl)))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var l struct{ Epoch int64 }
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("acquire %s: %d %v", name, resp.StatusCode, err)
	}
	return l.Epoch
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
