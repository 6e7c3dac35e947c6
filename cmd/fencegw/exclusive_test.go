package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fencegw/fencegw/wire"
)

// receipt is one write as an upstream received it: from its handler's
// start (the head had arrived) to the end of its body.
type receipt struct {
	replica    int
	holder     string
	epoch      int64
	start, end time.Time
	whole      bool
}

// receiptLog is an upstream that records every write's receipt interval,
// answering after delay.
type receiptLog struct {
	mu  sync.Mutex
	got []receipt
}

func (l *receiptLog) server(t *testing.T, replica int, delay time.Duration) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		b, err := io.ReadAll(r.Body)
		rc := receipt{replica: replica, holder: r.Header.Get("X-Holder"), start: start, end: time.Now(),
			whole: err == nil && (r.ContentLength < 0 || int64(len(b)) == r.ContentLength)}
		rc.epoch, _ = strconv.ParseInt(r.Header.Get("Fencing-Epoch"), 10, 64)
		l.mu.Lock()
		l.got = append(l.got, rc)
		l.mu.Unlock()
		time.Sleep(delay)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (l *receiptLog) snapshot() []receipt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// exclusive checks that writes of different epochs never overlap and come
// in epoch order: every write received whole at an epoch ended before any
// write at a higher epoch started. It returns the violations.
func exclusive(rs []receipt) []string {
	var bad []string
	for _, a := range rs {
		for _, b := range rs {
			if a.epoch < b.epoch && a.whole && !a.end.Before(b.start) {
				bad = append(bad, fmt.Sprintf("%s's write at epoch %d ended %s, after %s's write at epoch %d started",
					a.holder, a.epoch, a.end.Sub(b.start), b.holder, b.epoch))
			}
		}
	}
	return bad
}

// replicaConfig writes a configuration for one replica: the signed route
// /w/ to up, the raw route /raw/ (resource raw-r) to raw, and lockDelay.
func replicaConfig(t *testing.T, store, up, raw string, lockDelay time.Duration) string {
	t.Helper()
	c := fmt.Sprintf(`store: %q
lock_delay: %s
routes:
  - prefix: "/w/"
    upstream: %q
    tokens: signed
  - prefix: "/raw/"
    upstream: %q
    tokens: raw
    resource: "raw-r"
`, store, lockDelay, up, raw)
	return writeFile(t, t.TempDir(), "fencegw.yaml", []byte(c))
}

// TestExclusiveEpochsAcrossReplicas is the exclusivity check of issue 11:
// three gateway processes over one PostgreSQL or etcd store, three leader
// processes campaigning for one lease (2 s, lock_delay 1 s) and each
// writing through another replica than the one it leases through, leaders
// frozen with SIGSTOP past their lease and resumed, and raw writers at
// racing epochs on a resource without a lease. A recording upstream notes
// each write's receipt interval. No write at an epoch is received after a
// write at a higher epoch started, for the leased resource across all
// replicas, and per replica on the raw route.
func TestExclusiveEpochsAcrossReplicas(t *testing.T) {
	for name, storeURL := range sharedStores {
		t.Run(name, func(t *testing.T) {
			store := storeURL(t)
			leased, raw := &receiptLog{}, &receiptLog{}
			up := leased.server(t, -1, 0)
			var replicas []*proc
			for i := 0; i < 3; i++ {
				rawUp := raw.server(t, i, 5*time.Millisecond)
				replicas = append(replicas, start(t, "--config", replicaConfig(t, store, up.URL, rawUp.URL, time.Second)))
			}
			var leaders []*leaderProc
			for i, holder := range []string{"node-a", "node-b", "node-c"} {
				leaders = append(leaders, startLeader(t, replicas[i].api, replicas[(i+1)%3].proxy+"/w/send", holder,
					30*time.Millisecond, "--lease-duration", "2s", "--renew-deadline", "1500ms", "--retry", "200ms"))
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for i, p := range replicas {
				for w := 0; w < 2; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rawWriter(p.proxy+"/raw/x", fmt.Sprintf("raw-%d-%d", i, w), stop)
					}()
				}
			}

			// The nemesis: freeze the leader past its lease (2 s) and its
			// lock-delay (1 s), then resume it.
			for round := 0; round < 4; round++ {
				time.Sleep(1500 * time.Millisecond)
				l := currentLeader(leaders)
				if l == nil {
					continue
				}
				l.cmd.Process.Signal(syscall.SIGSTOP)
				time.Sleep(3500 * time.Millisecond)
				l.cmd.Process.Signal(syscall.SIGCONT)
			}
			time.Sleep(2 * time.Second)
			close(stop)
			wg.Wait()
			for _, l := range leaders {
				l.cmd.Process.Kill()
			}
			time.Sleep(300 * time.Millisecond) // what was in flight arrives

			rs := leased.snapshot()
			epochs := map[int64]int{}
			for _, r := range rs {
				epochs[r.epoch]++
			}
			if len(epochs) < 3 {
				t.Fatalf("the leased resource saw epochs %v: too few takeovers to check", epochs)
			}
			if bad := exclusive(rs); len(bad) > 0 {
				t.Fatalf("%d violations on the leased resource, e.g. %s", len(bad), bad[0])
			}
			var fenced int
			for _, l := range leaders {
				for _, ev := range l.snapshot() {
					if ev["event"] == "write" && ev["status"] == 412.0 {
						fenced++
					}
				}
			}
			byReplica := map[int][]receipt{}
			for _, r := range raw.snapshot() {
				byReplica[r.replica] = append(byReplica[r.replica], r)
			}
			for i := 0; i < 3; i++ {
				if bad := exclusive(byReplica[i]); len(bad) > 0 {
					t.Fatalf("replica %d: %d violations on the raw route, e.g. %s", i, len(bad), bad[0])
				}
			}
			t.Logf("leased: %d writes received at epochs %v, %d refused with 412 after a freeze; raw: %d, %d, %d writes through the replicas",
				len(rs), epochs, fenced, len(byReplica[0]), len(byReplica[1]), len(byReplica[2]))
		})
	}
}

// currentLeader is the leader process whose latest term has the highest
// epoch and has not stopped; nil when none leads.
func currentLeader(leaders []*leaderProc) *leaderProc {
	var best *leaderProc
	var bestEpoch float64
	for _, l := range leaders {
		var epoch float64
		for _, ev := range l.snapshot() {
			switch ev["event"] {
			case "leading":
				epoch = ev["epoch"].(float64)
			case "stopped":
				epoch = 0
			}
		}
		if epoch > bestEpoch {
			best, bestEpoch = l, epoch
		}
	}
	return best
}

// rawWriter writes raw epochs to target until stop closes: mostly the
// highest it saw admitted, sometimes one above, sometimes one below.
func rawWriter(target, holder string, stop <-chan struct{}) {
	client := &http.Client{Timeout: 5 * time.Second}
	var epoch int64 = 1
	for {
		select {
		case <-stop:
			return
		default:
		}
		e := epoch + int64(rand.IntN(3)) - 1
		if rand.IntN(4) == 0 {
			e = epoch + 1
		}
		e = max(e, 1)
		req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader("raw"))
		req.Header.Set("Fencing-Token", strconv.FormatInt(e, 10))
		req.Header.Set("X-Holder", holder)
		resp, err := client.Do(req)
		if err != nil {
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusCreated {
			epoch = max(epoch, e)
		} else if resp.StatusCode == http.StatusPreconditionFailed {
			epoch++
		}
	}
}

// TestSlowBodyStraddlingTheLapse runs a fencegw process, leases a resource
// for 2 s and sends a raw write at its epoch whose body is half sent
// before the lapse and the rest after: the client gets 412 and the
// upstream never receives the body whole (part of it, its connection cut).
func TestSlowBodyStraddlingTheLapse(t *testing.T) {
	log := &receiptLog{}
	up := log.server(t, 0, 0)
	gw := start(t, "--store", filepath.Join(t.TempDir(), "s.db"), "--config",
		writeFile(t, t.TempDir(), "c.yaml", []byte(fmt.Sprintf("routes:\n  - prefix: /raw/\n    upstream: %q\n    tokens: raw\n    resource: job\n    raw_on_leased: allow\n", up.URL))))
	var lease struct {
		Epoch wire.Epoch `json:"epoch"`
		Held  bool       `json:"held"`
	}
	postJSON(t, gw.api+"/v1/leases/job/acquire", `{"holder":"node-a","ttl_seconds":2}`, &lease)

	const size = 256 << 10
	conn, err := net.Dial("tcp", strings.TrimPrefix(gw.proxy, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /raw/x HTTP/1.1\r\nHost: gw\r\nFencing-Token: %d\r\nContent-Length: %d\r\n\r\n%s", lease.Epoch, size, strings.Repeat("a", size/2))
	answered := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		getJSON(t, gw.api+"/v1/leases/job", &lease)
		if !lease.Held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lease did not lapse")
		}
	}
	io.WriteString(conn, strings.Repeat("a", size-size/2)) // may fail: the gateway cut it
	select {
	case status := <-answered:
		if status != http.StatusPreconditionFailed {
			t.Fatalf("the straddling write got %d, want 412", status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to the straddling write")
	}
	time.Sleep(300 * time.Millisecond)
	rs := log.snapshot()
	if len(rs) != 1 || rs[0].whole {
		t.Fatalf("the upstream received %+v; want the write once, cut short", rs)
	}
}

// postJSON posts body to url and decodes the 200 answer into v.
func postJSON(t *testing.T, url, body string, v any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s = %d %s", url, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}
