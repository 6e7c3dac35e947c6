package bench

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	auditFlood = flag.Duration("audit-flood", 70*time.Second,
		"length of each audit flood (no token; a valid token for another resource), spanning a purge (0: skip)")
	auditFloodKeys = flag.String("audit-keys", "audit: {history: {max_entries: 100}, junk: {max_entries: 100}}",
		"the audit configuration of the flood's gateway (max_entries at their minimum)")
)

// probe is what the fencing work measured during a flood: a lease renewal
// every 500 ms and a fenced first write every 200 ms.
type probe struct {
	name                   string
	n, unavailable, failed int
	slowest                time.Duration
}

// auditFloodRun floods the embedded store's audit, with audit max_entries
// at their minimum so that every purge deletes nearly everything written,
// first with writes without a token to distinct resources, then with
// writes presenting a valid token for another resource (each a refusal of
// its own in the lease history class: one entry per request), while a
// leader renews every 500 ms and a writer makes a fenced first write (a
// HWM raise on disk) every 200 ms. It prints the slowest renewal and
// write and how many were answered 503 or failed.
func auditFloodRun(b *testing.B, dir, bin, upstream string, cpuProxy, cpuLoad int) {
	extra := fmt.Sprintf("  - {prefix: \"/hist/\", upstream: %q, tokens: signed, resource: \"hist-{header:X-Name}\"}\n%s\n",
		upstream, *auditFloodKeys)
	g := startGatewayWith(b, dir, bin, "audit-flood", filepath.Join(dir, "audit-flood.db"), upstream, cpuProxy, extra)
	token := g.token(b)
	for i, l := range []load{
		{unique: true, uniqueHeader: "X-Name", first: 0},
		{unique: true, uniqueHeader: "X-Name", first: 1e9, headers: map[string]string{"Fencing-Token": token}},
	} {
		name := []string{"no token, distinct resources", "token for another resource, distinct resources"}[i]
		l.pace = 8 * time.Millisecond
		stop := make(chan struct{})
		var wg sync.WaitGroup
		renew, write := &probe{name: "renewal"}, &probe{name: "fenced write"}
		wg.Add(2)
		go func() { defer wg.Done(); g.renewEvery(stop, 500*time.Millisecond, renew) }()
		go func() { defer wg.Done(); g.firstWriteEvery(stop, 200*time.Millisecond, write, int64(i)*1e9) }()
		res, err := runWrk(dir, g.proxy+"/hist/send", l, 8, *auditFlood, cpuLoad)
		close(stop)
		wg.Wait()
		if err != nil {
			b.Fatal(err)
		}
		if res.non2xx != res.total || res.errors > 0 {
			b.Fatalf("audit flood: %d of %d answers refused, %d socket errors; want every one refused", res.non2xx,
				res.total, res.errors)
		}
		slow := g.slowStoreCalls(b)
		fmt.Printf("\naudit flood (embedded, %s): %d requests in %s (%.0f/s, each refused)\n", name, res.total,
			*auditFlood, res.rps)
		fmt.Printf("  store calls over 250ms by operation, since the gateway started: %v\n", slow)
		for _, p := range []*probe{renew, write} {
			fmt.Printf("  %-13s %4d made, slowest %8s, %d answered 503, %d failed otherwise\n", p.name, p.n,
				p.slowest.Round(time.Millisecond), p.unavailable, p.failed)
		}
	}
}

// renewEvery acquires the lease bench-leader and renews it every period
// until stop closes, recording each renewal in p.
func (g *gateway) renewEvery(stop <-chan struct{}, period time.Duration, p *probe) {
	epoch := ""
	post := func(op, body string) (int, string) {
		resp, err := http.Post(g.api+"/v1/leases/bench-leader/"+op, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		var buf [4096]byte
		n, _ := resp.Body.Read(buf[:])
		return resp.StatusCode, string(buf[:n])
	}
	if status, answer := post("acquire", `{"holder":"leader","ttl_seconds":15}`); status == http.StatusOK {
		epoch = jsonField(answer, "epoch")
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		start := time.Now()
		status, _ := post("renew", `{"holder":"leader","epoch":`+epoch+`}`)
		p.record(status, time.Since(start))
	}
}

// firstWriteEvery writes to a new resource of /many/ at epoch 1 every
// period until stop closes (each a HWM raise committed to disk), recording
// each write in p.
func (g *gateway) firstWriteEvery(stop <-chan struct{}, period time.Duration, p *probe, first int64) {
	t := time.NewTicker(period)
	defer t.Stop()
	for n := first; ; n++ {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		req, _ := http.NewRequest(http.MethodPost, g.proxy+"/many/send", strings.NewReader(body))
		req.Header.Set("Fencing-Token", "1")
		req.Header.Set("Fencing-Resource", "probe-"+strconv.FormatInt(n, 10))
		start := time.Now()
		status := 0
		if resp, err := http.DefaultClient.Do(req); err == nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
		p.record(status, time.Since(start))
	}
}

func (p *probe) record(status int, took time.Duration) {
	p.n++
	p.slowest = max(p.slowest, took)
	switch {
	case status == http.StatusServiceUnavailable:
		p.unavailable++
	case status < 200 || status > 299:
		p.failed++
	}
}

// jsonField returns the value of a top-level number or string field of a
// small JSON object, as it is written.
func jsonField(obj, name string) string {
	i := strings.Index(obj, `"`+name+`":`)
	if i < 0 {
		return "0"
	}
	v := obj[i+len(name)+3:]
	end := strings.IndexAny(v, ",}")
	if end < 0 {
		return "0"
	}
	return strings.TrimSpace(v[:end])
}

// slowStoreCalls counts, by operation, the gateway's store calls that took
// over 250 ms, from its fencegw_store_duration_seconds histogram.
func (g *gateway) slowStoreCalls(b *testing.B) map[string]int64 {
	b.Helper()
	resp, err := http.Get(g.api + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	slow := map[string]int64{}
	for _, line := range strings.Split(string(raw), "\n") {
		count := strings.HasPrefix(line, "fencegw_store_duration_seconds_count{")
		fast := strings.HasPrefix(line, "fencegw_store_duration_seconds_bucket{") && strings.Contains(line, `le="0.25"`)
		if !count && !fast {
			continue
		}
		op, _, _ := strings.Cut(line[strings.Index(line, "{")+1:], "}")
		if _, v, ok := strings.Cut(op, `operation="`); ok {
			op, _, _ = strings.Cut(v, `"`)
		}
		n, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if fast {
			n = -n
		}
		slow[op] += int64(n)
	}
	return slow
}
