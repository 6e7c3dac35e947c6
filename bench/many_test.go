package bench

import (
	"bufio"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// manyChunk is the length of one wrk run of first writes; the run repeats
// them, each with names of its own, until -resources names were written.
const manyChunk = 10 * time.Second

// manyResources measures first writes to new resources on the embedded
// store (every request names a resource never seen, so each is fenced on
// disk before it is forwarded) until -resources distinct resources were
// written, and the resident memory each costs the gateway. Then it drives
// one hot resource and counts the store calls that made: with every
// resource cached, none.
func manyResources(b *testing.B, dir, bin, upstream string, cpuProxy, cpuLoad int) {
	g := startGateway(b, dir, bin, "many", filepath.Join(dir, "many.db"), upstream, cpuProxy)
	g.write(b, "/raw/send", "1", 202)
	before, err := g.memory()
	if err != nil {
		b.Fatal(err)
	}
	var written int64
	var took time.Duration
	var p99s []result
	for chunk := int64(0); written < int64(*many); chunk++ {
		l := load{headers: map[string]string{"Fencing-Token": "1"}, unique: true, first: chunk * 1e9}
		res, err := runWrk(dir, g.proxy+"/many/send", l, *conns, manyChunk, cpuLoad)
		if err != nil {
			b.Fatal(err)
		}
		if res.non2xx > 0 || res.errors > 0 {
			b.Fatalf("many resources: %d of %d answers not 202 (%d socket errors)", res.non2xx, res.total, res.errors)
		}
		written += res.total
		took += time.Duration(float64(res.total) / res.rps * float64(time.Second))
		p99s = append(p99s, res)
	}
	after, err := g.memory()
	if err != nil {
		b.Fatal(err)
	}
	// The last run's cut-off requests may still be finishing: count from
	// when the store calls stop.
	calls := g.storeCalls(b)
	for {
		time.Sleep(200 * time.Millisecond)
		now := g.storeCalls(b)
		if now == calls {
			break
		}
		calls = now
	}
	hot, err := runWrk(dir, g.proxy+"/raw/send", load{headers: map[string]string{"Fencing-Token": "1"}}, *conns, *duration, cpuLoad)
	if err != nil {
		b.Fatal(err)
	}
	if hot.non2xx > 0 || hot.errors > 0 {
		b.Fatalf("hot resource: %d of %d answers not 202 (%d socket errors)", hot.non2xx, hot.total, hot.errors)
	}
	hotCalls := g.storeCalls(b) - calls
	n := float64(written)
	fmt.Printf("\nfirst writes to new resources (embedded): %.0f/s, p99 %s (median of %d runs); %d resources;\n"+
		"per resource: %.0f B of anonymous memory (the HWM cache and garbage not yet collected), "+
		"%.0f B of RSS (with the store's mapped file)\n"+
		"one hot resource after them: %.0f/s, %d store calls in %d requests\n",
		n/took.Seconds(), time.Duration(median(p99s, func(x result) float64 { return float64(x.p99) })), len(p99s), written,
		float64(after.anon-before.anon)/n, float64(after.rss-before.rss)/n,
		hot.rps, hotCalls, hot.total)
}

// storeCalls is how many store operations the gateway made so far, from
// its fencegw_store_duration_seconds histogram.
func (g *gateway) storeCalls(b *testing.B) int64 {
	b.Helper()
	resp, err := http.Get(g.api + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var n int64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "fencegw_store_duration_seconds_count{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			b.Fatalf("metrics: %q: %v", line, err)
		}
		n += int64(v)
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return n
}
