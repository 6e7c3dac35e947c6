package bench

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/fencegw/fencegw/internal/testutil/testetcd"
	"github.com/fencegw/fencegw/internal/testutil/testpg"
)

var (
	rounds   = flag.Int("rounds", 3, "interleaved rounds per row; the table reports medians")
	duration = flag.Duration("duration", 4*time.Second, "length of one wrk run")
	conns    = flag.Int("conns", 32, "wrk connections")
	only     = flag.String("only", "", "run only the rows whose name matches this regular expression")
	pace     = flag.Duration("pace", 8*time.Millisecond, "mean pause between a connection's requests in the paced runs, which measure latency below saturation (0: skip)")
	many     = flag.Int("resources", 100_000, "distinct resources the many-resources run writes (0: skip)")
)

// row is one line of the table: a path under test and the load driving it.
type row struct {
	name string
	url  string
	load load
	// refusals: every answer must be 412 (the row measures refusing).
	refusals bool
	results  []result
	paced    []result // the same load with each connection pausing between requests
}

// BenchmarkTable measures fencegw against its baselines side by side, as
// docs/performance.md reports. The proxy under test runs alone on CPU 0,
// wrk and the upstream (and the stores) on CPU 1, when there are two.
//
//	./bench/run            # or: go test -run '^$' -bench Table -benchtime 1x ./bench
func BenchmarkTable(b *testing.B) {
	if b.N > 1 {
		b.Skip("one iteration is the whole table: run with -benchtime 1x")
	}
	dir := b.TempDir()
	cpuProxy, cpuLoad := 0, 1
	if runtime.NumCPU() < 2 {
		cpuProxy, cpuLoad = -1, -1
	}
	if _, err := lookPath("wrk", "wrk"); err != nil {
		b.Fatal(err)
	}
	upstream := freeAddr(b)
	startNginx(b, dir, "nginx-upstream", cpuLoad, upstreamServers(upstream))
	upstreamURL := "http://" + upstream

	checker := freeAddr(b)
	pc := startProc(b, dir, "checker", pinned(cpuProxy, goBuild(b, dir, "github.com/fencegw/fencegw/bench/checker"), "-listen", checker))
	nginxProxy, nginxAuth := freeAddr(b), freeAddr(b)
	pn := startNginx(b, dir, "nginx-proxy", cpuProxy, proxyServers(nginxProxy, nginxAuth, upstream, checker))
	bare := freeAddr(b)
	pb := startProc(b, dir, "bareproxy", pinned(cpuProxy, goBuild(b, dir, "github.com/fencegw/fencegw/bench/bareproxy"),
		"-listen", bare, "-upstream", upstreamURL))
	waitHTTP(b, "http://"+nginxProxy+"/", pn)
	waitHTTP(b, "http://"+bare+"/", pb)
	waitHTTP(b, "http://"+checker+"/", pc)

	fencegw := goBuild(b, dir, "github.com/fencegw/fencegw/cmd/fencegw")
	embedded := startGateway(b, dir, fencegw, "embedded", filepath.Join(dir, "fencegw.db"), upstreamURL, cpuProxy)
	pg := startGateway(b, dir, fencegw, "postgres", testpg.Shared(b).NewDatabase(b), upstreamURL, cpuProxy)
	etcd := startGateway(b, dir, fencegw, "etcd", "etcd://"+strings.Join(testetcd.Start(b, 1).Endpoints(), ","), upstreamURL, cpuProxy)
	otlp := startOTLPSink(b)
	traced := func(name, ratio string) *gateway {
		return startGateway(b, dir, fencegw, name, filepath.Join(dir, name+".db"), upstreamURL, cpuProxy,
			"OTEL_EXPORTER_OTLP_ENDPOINT="+otlp.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
			"OTEL_TRACES_SAMPLER=traceidratio", "OTEL_TRACES_SAMPLER_ARG="+ratio)
	}
	traced100, traced1 := traced("otlp-100", "1"), traced("otlp-1", "0.01")

	raw := map[string]string{"Fencing-Token": "5"}
	rows := []*row{
		{name: "nginx proxy_pass, upstream keepalive", url: "http://" + nginxProxy + "/send"},
		{name: "nginx auth_request -> Go checker", url: "http://" + nginxAuth + "/send",
			load: load{headers: map[string]string{"Fencing-Token": "5", "Fencing-Resource": "bench"}}},
		{name: "bare Go httputil.ReverseProxy", url: "http://" + bare + "/send"},
		{name: "fencegw embedded, signed, admitted", url: embedded.proxy + "/signed/send",
			load: load{headers: map[string]string{"Fencing-Token": embedded.token(b)}}},
		{name: "fencegw embedded, raw, admitted", url: embedded.proxy + "/raw/send", load: load{headers: raw}},
		{name: "fencegw embedded, stale refusal", url: embedded.proxy + "/raw/send",
			load: load{headers: map[string]string{"Fencing-Token": "4"}}, refusals: true},
		{name: "fencegw PostgreSQL, signed, admitted", url: pg.proxy + "/signed/send",
			load: load{headers: map[string]string{"Fencing-Token": pg.token(b)}}},
		{name: "fencegw etcd, signed, admitted", url: etcd.proxy + "/signed/send",
			load: load{headers: map[string]string{"Fencing-Token": etcd.token(b)}}},
		{name: "fencegw embedded, signed, OTLP, 100% sampled", url: traced100.proxy + "/signed/send",
			load: load{headers: map[string]string{"Fencing-Token": traced100.token(b)}}},
		{name: "fencegw embedded, signed, OTLP, 1% sampled", url: traced1.proxy + "/signed/send",
			load: load{headers: map[string]string{"Fencing-Token": traced1.token(b)}}},
	}
	for _, g := range []*gateway{embedded, pg, etcd, traced100, traced1} {
		g.write(b, "/raw/send", "5", 201, 202) // the raw rows' HWM
	}
	keep, err := regexp.Compile(*only)
	if err != nil {
		b.Fatalf("-only: %v", err)
	}
	rows = slices.DeleteFunc(rows, func(r *row) bool { return !keep.MatchString(r.name) })
	for round := 0; round < *rounds; round++ {
		for _, r := range rows {
			res, err := runWrk(dir, r.url, r.load, *conns, *duration, cpuLoad)
			if err != nil {
				b.Fatal(err)
			}
			if err := r.check(res); err != nil {
				b.Fatal(err)
			}
			r.results = append(r.results, res)
			if *pace > 0 {
				l := r.load
				l.pace = *pace
				res, err := runWrk(dir, r.url, l, *conns, *duration, cpuLoad)
				if err != nil {
					b.Fatal(err)
				}
				if err := r.check(res); err != nil {
					b.Fatal(err)
				}
				r.paced = append(r.paced, res)
			}
		}
	}
	printTable(rows)
	if *many > 0 {
		manyResources(b, dir, fencegw, upstreamURL, cpuProxy, cpuLoad)
	}
	if *keyedMB > 0 {
		keyedBody(b, dir, fencegw, cpuProxy)
	}
	if *auditFlood > 0 {
		auditFloodRun(b, dir, fencegw, upstreamURL, cpuProxy, cpuLoad)
	}
}

// check reports a run whose answers were not all as expected.
func (r *row) check(res result) error {
	if res.errors > 0 || (r.refusals && res.non2xx != res.total) || (!r.refusals && res.non2xx > 0) {
		return fmt.Errorf("%s: %d of %d answers not as expected (%d socket errors)", r.name, res.non2xx, res.total, res.errors)
	}
	return nil
}

// printTable prints medians and their ratios to the first row (nginx) and
// to the bare Go proxy.
func printTable(rows []*row) {
	base := map[string]float64{}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "path\treq/s\tp99\t× nginx\t× bare Go\tpaced req/s\tpaced p99\tp99 × nginx\t\n")
	for _, r := range rows {
		rps := median(r.results, func(x result) float64 { return x.rps })
		p99 := time.Duration(median(r.results, func(x result) float64 { return float64(x.p99) }))
		pacedRPS := median(r.paced, func(x result) float64 { return x.rps })
		pacedP99 := time.Duration(median(r.paced, func(x result) float64 { return float64(x.p99) }))
		for _, k := range []string{"nginx proxy_pass", "bare Go"} {
			if strings.HasPrefix(r.name, k) {
				base[k] = rps
				base[k+" paced p99"] = float64(pacedP99)
			}
		}
		fmt.Fprintf(w, "%s\t%.0f\t%s\t%s\t%s\t%.0f\t%s\t%s\t\n", r.name, rps, p99.Round(10*time.Microsecond),
			ratio(rps, base["nginx proxy_pass"]), ratio(rps, base["bare Go"]),
			pacedRPS, pacedP99.Round(10*time.Microsecond), ratio(float64(pacedP99), base["nginx proxy_pass paced p99"]))
	}
	w.Flush()
}

func ratio(v, base float64) string {
	if base == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v/base)
}

func median(rs []result, f func(result) float64) float64 {
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	if len(vs) == 0 {
		return 0
	}
	return vs[len(vs)/2]
}

// gateway is one fencegw process under test.
type gateway struct {
	*proc
	proxy, api string
}

// startGateway runs fencegw serve on store with the benchmark's routes:
// /raw/ (raw epochs, resource bench-raw), /signed/ (signed tokens,
// resource bench-signed) and /many/ (raw epochs, the resource from
// Fencing-Resource).
func startGateway(b *testing.B, dir, bin, name, store, upstream string, cpu int, env ...string) *gateway {
	b.Helper()
	return startGatewayWith(b, dir, bin, name, store, upstream, cpu, "", env...)
}

// startGatewayWith is startGateway with extra YAML appended to the
// configuration, after the routes (more route items, then other keys).
func startGatewayWith(b *testing.B, dir, bin, name, store, upstream string, cpu int, extra string, env ...string) *gateway {
	b.Helper()
	proxy, api := freeAddr(b), freeAddr(b)
	conf := fmt.Sprintf(`listen: %q
api_listen: %q
store: %q
signing:
  token_lifetime: 2h
routes:
  - {prefix: "/raw/", upstream: %q, tokens: raw, resource: bench-raw}
  - {prefix: "/signed/", upstream: %q, tokens: signed, resource: bench-signed}
  - {prefix: "/many/", upstream: %q, tokens: raw}
`, proxy, api, store, upstream, upstream, upstream) + extra
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := pinned(cpu, bin, "serve", "--config", path)
	cmd.Env = append(os.Environ(), env...)
	g := &gateway{proc: startProc(b, dir, "fencegw-"+name, cmd), proxy: "http://" + proxy, api: "http://" + api}
	waitHTTP(b, g.api+"/healthz", g.proc)
	return g
}

// token acquires the bench-signed lease (for two hours) and returns its
// token.
func (g *gateway) token(b *testing.B) string {
	b.Helper()
	resp, err := http.Post(g.api+"/v1/leases/bench-signed/acquire", "application/json",
		strings.NewReader(`{"holder":"bench","ttl_seconds":7200}`))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var l struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || resp.StatusCode != http.StatusOK || l.Token == "" {
		b.Fatalf("acquire: %d %v", resp.StatusCode, err)
	}
	return l.Token
}

// write sends one write and checks its status is one of want.
func (g *gateway) write(b *testing.B, path, token string, want ...int) {
	b.Helper()
	req, _ := http.NewRequest(http.MethodPost, g.proxy+path, bytes.NewBufferString(body))
	req.Header.Set("Fencing-Token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if !slices.Contains(want, resp.StatusCode) {
		b.Fatalf("POST %s at %s: %d, want %v", path, token, resp.StatusCode, want)
	}
}

// startOTLPSink is an OTLP/HTTP receiver that accepts every export and
// keeps nothing: the traced rows measure the gateway's cost of exporting.
func startOTLPSink(b *testing.B) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	b.Cleanup(s.Close)
	return s
}
