package faults

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// envSoak asks for the soak test and says how long it runs (e.g. 10m).
const envSoak = "FENCEGW_FAULTS_SOAK"

// TestSoak runs on demand (FENCEGW_FAULTS_SOAK=10m): it measures the
// cluster's capacity for admitted writes over PostgreSQL, then sends 80%
// of it for the given duration with no fault, and checks that no request
// failed, and that no gateway's memory (RSS) or goroutine count grew.
func TestSoak(t *testing.T) {
	s := os.Getenv(envSoak)
	if s == "" {
		t.Skipf("a long run on demand: set %s=10m", envSoak)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Minute {
		t.Fatalf("%s: %q is not a duration of a minute or more", envSoak, s)
	}
	c := newClusterWith(t, "postgres", true)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	// Capacity: 32 clients, each on its own resource with rising epochs
	// (every write admitted), for 10 seconds.
	var epochs [64]atomic.Int64
	send := func(i int) error {
		e := epochs[i].Add(1)
		req, _ := http.NewRequest(http.MethodPost, c.gateways[i%3].proxyURL()+"/raw/op", strings.NewReader("soak"))
		req.Header.Set("Fencing-Token", strconv.FormatInt(e, 10))
		req.Header.Set("X-Resource", fmt.Sprintf("soak-%d", i))
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	var done atomic.Int64
	var wg sync.WaitGroup
	measureUntil := time.Now().Add(10 * time.Second)
	for i := range 32 {
		wg.Go(func() {
			for time.Now().Before(measureUntil) {
				if send(i) == nil {
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	capacity := float64(done.Load()) / 10
	rate := 0.8 * capacity
	t.Logf("capacity %.0f writes/s; soaking at %.0f/s for %s", capacity, rate, d)

	// The soak: rate writes per second, spread over the resources.
	var failures atomic.Int64
	var firstErr atomic.Value
	samples := make([][]sample, len(c.gateways))
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			for r, g := range c.gateways {
				samples[r] = append(samples[r], sampleOf(t, client, g))
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	// 64 workers, each writing its own resource in order (so that every
	// write is admitted), take turns from a pacer at rate.
	turns := make(chan struct{}, 64)
	var behind atomic.Int64 // turns the workers were too busy to take
	end := time.Now().Add(d)
	wg.Go(func() {
		defer close(turns)
		interval := time.Duration(float64(time.Second) / rate)
		for next := time.Now(); next.Before(end); next = next.Add(interval) {
			time.Sleep(time.Until(next))
			select {
			case turns <- struct{}{}:
			default:
				behind.Add(1)
			}
		}
	})
	for i := range 64 {
		wg.Go(func() {
			for range turns {
				if err := send(i); err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	if n := failures.Load(); n > 0 {
		t.Errorf("%d writes failed during the soak; the first: %v", n, firstErr.Load())
	}
	t.Logf("turns the workers were too busy to take: %d", behind.Load())
	for r, ss := range samples {
		t.Logf("gateway %d: %v", r, ss)
		if len(ss) < 4 {
			continue
		}
		// After a warm-up quarter, memory and goroutines stay flat: the
		// last sample is within 25% (and 16 MiB) of the warm one.
		warm, last := ss[len(ss)/4], ss[len(ss)-1]
		if last.rss > warm.rss*5/4+16<<20 {
			t.Errorf("gateway %d: RSS grew from %d to %d KiB", r, warm.rss>>10, last.rss>>10)
		}
		if last.goroutines > warm.goroutines+32 {
			t.Errorf("gateway %d: goroutines grew from %d to %d", r, warm.goroutines, last.goroutines)
		}
	}
}

// sample is a gateway's resident memory and goroutine count at one time.
type sample struct {
	rss        int64 // bytes
	goroutines int
}

func (s sample) String() string { return fmt.Sprintf("%dMiB/%dg", s.rss>>20, s.goroutines) }

// sampleOf reads g's RSS from /proc and its goroutines from pprof.
func sampleOf(t *testing.T, client *http.Client, g *gatewayProc) sample {
	var s sample
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", g.pid()))
	if err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				s.rss = kb << 10
			}
		}
		f.Close()
	}
	resp, err := client.Get(g.apiURL() + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Logf("goroutines of gateway %d: %v", g.replica, err)
		return s
	}
	defer resp.Body.Close()
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	// "goroutine profile: total 42"
	if i := strings.LastIndex(line, " "); i >= 0 {
		s.goroutines, _ = strconv.Atoi(strings.TrimSpace(line[i+1:]))
	}
	return s
}
