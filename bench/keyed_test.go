package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var keyedMB = flag.Int("keyed-mb", 400, "MiB of the keyed write whose peak resident memory the keyed-body run measures (0: skip)")

// keyedTargetRSS is the most a gateway may hold at its peak while it
// forwards a 400 MiB keyed write (issue 23).
const keyedTargetRSS = 150 << 20

// BenchmarkKeyedBody runs the keyed-body measurement alone (BenchmarkTable
// runs it after the table):
//
//	go test -run '^$' -bench '^BenchmarkKeyedBody$' -benchtime 1x ./bench -args -keyed-mb 400
func BenchmarkKeyedBody(b *testing.B) {
	if b.N > 1 {
		b.Skip("one iteration is the whole measurement: run with -benchtime 1x")
	}
	if *keyedMB <= 0 {
		b.Skip("-keyed-mb 0")
	}
	dir := b.TempDir()
	keyedBody(b, dir, goBuild(b, dir, "github.com/fencegw/fencegw/cmd/fencegw"), -1)
}

// keyedBody sends one -keyed-mb write with an Idempotency-Key through a
// fencegw process on the embedded store to an upstream that hashes the
// body as it arrives, then its retry (answered from the record, its body
// hashed by the gateway), and reports the gateway's peak resident memory
// (VmHWM) after each. The body streams: the peak must stay far below it.
func keyedBody(b *testing.B, dir, bin string, cpu int) {
	size := int64(*keyedMB) << 20
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		if _, err := io.Copy(h, r.Body); err != nil {
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, hex.EncodeToString(h.Sum(nil)))
	}))
	defer up.Close()
	g := startKeyedGateway(b, dir, bin, up.URL, size, cpu)
	base, err := peakRSS(g.pid())
	if err != nil {
		b.Fatal(err)
	}
	want := sha256.New()
	io.Copy(want, &fill{n: size})
	start := time.Now()
	first := keyedWrite(b, g.proxy, size)
	took := time.Since(start)
	afterFirst, _ := peakRSS(g.pid())
	again := keyedWrite(b, g.proxy, size)
	afterRetry, _ := peakRSS(g.pid())
	if first.status != http.StatusCreated || first.body != hex.EncodeToString(want.Sum(nil)) {
		b.Fatalf("keyed write: %d %q, want 201 and the body's digest", first.status, first.body)
	}
	if again.status != http.StatusCreated || again.replayed != "true" || again.body != first.body {
		b.Fatalf("its retry: %d %q replayed %q, want the answer replayed", again.status, again.body, again.replayed)
	}
	mib := func(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
	fmt.Printf("keyed body: %d MiB forwarded in %s (%.0f MiB/s); gateway peak RSS (VmHWM) %s at start, %s after the write, %s after its replayed retry (target under %s)\n",
		*keyedMB, took.Round(time.Millisecond), float64(size)/(1<<20)/took.Seconds(), mib(base), mib(afterFirst), mib(afterRetry), mib(keyedTargetRSS))
	b.ReportMetric(float64(afterRetry)/(1<<20), "peak-RSS-MiB")
	if *keyedMB <= 400 && afterRetry > keyedTargetRSS {
		b.Errorf("peak RSS %s with a %d MiB keyed body, target under %s", mib(afterRetry), *keyedMB, mib(keyedTargetRSS))
	}
}

// startKeyedGateway runs fencegw serve on a fresh embedded store with one
// route, /keyed/ (raw epochs, resource bench-keyed, Idempotency-Key
// required), whose bodies may be as long as size.
func startKeyedGateway(b *testing.B, dir, bin, upstream string, size int64, cpu int) *gateway {
	b.Helper()
	proxy, api := freeAddr(b), freeAddr(b)
	conf := fmt.Sprintf(`listen: %q
api_listen: %q
store: %q
max_body_bytes: %d
upstream_timeout: 5m
routes:
  - {prefix: "/keyed/", upstream: %q, tokens: raw, resource: bench-keyed, idempotency: required}
`, proxy, api, filepath.Join(dir, "keyed.db"), size+1<<20, upstream)
	path := filepath.Join(dir, "keyed.yaml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		b.Fatal(err)
	}
	g := &gateway{proc: startProc(b, dir, "fencegw-keyed", pinned(cpu, bin, "serve", "--config", path)),
		proxy: "http://" + proxy, api: "http://" + api}
	waitHTTP(b, g.api+"/healthz", g.proc)
	return g
}

// keyedAnswer is what a keyed write got back.
type keyedAnswer struct {
	status         int
	body, replayed string
}

// keyedWrite posts a size-byte body with Idempotency-Key bench-1.
func keyedWrite(b *testing.B, proxy string, size int64) keyedAnswer {
	b.Helper()
	req, err := http.NewRequest(http.MethodPost, proxy+"/keyed/send", &fill{n: size})
	if err != nil {
		b.Fatal(err)
	}
	req.ContentLength = size
	req.Header.Set("Fencing-Token", "1")
	req.Header.Set("Idempotency-Key", `"bench-1"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return keyedAnswer{status: resp.StatusCode, body: string(bytes.TrimSpace(body)), replayed: resp.Header.Get("Idempotent-Replayed")}
}

// fill is n bytes of 'x', allocated by nobody.
type fill struct{ n int64 }

func (f *fill) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > f.n {
		p = p[:f.n]
	}
	for i := range p {
		p[i] = 'x'
	}
	f.n -= int64(len(p))
	return len(p), nil
}

// peakRSS reads a process's peak resident memory (VmHWM), in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM for pid %d", pid)
}
