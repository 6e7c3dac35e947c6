package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/server"
)

// BenchmarkProxy compares, side by side in one run, a bare
// httputil.ReverseProxy (the baseline) with fencegw admitting writes at the
// current epoch and refusing stale ones, without and with the framing guard
// of fencegw serve (server.Serve), all over loopback HTTP/1.1 to the same
// upstream with a 40-byte POST.
//
//	go test -run '^$' -bench BenchmarkProxy -benchmem ./gateway
func BenchmarkProxy(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)

	bare := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.SetXForwarded() },
		Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second},
	})
	defer bare.Close()

	// fencegw as the binary assembles it (server.New) on the embedded store,
	// once behind httptest's plain listener and once served by Serve, as
	// fencegw serve runs it: framing guarded.
	c := config.Default()
	c.Store = filepath.Join(b.TempDir(), "bench.db")
	c.Routes = []config.Route{{Prefix: "/leased/", Upstream: up.URL, Tokens: config.TokensSigned, Resource: "leased"},
		{Prefix: "/", Upstream: up.URL, Tokens: config.TokensRaw, Resource: "bench"}}
	if err := c.Validate(); err != nil {
		b.Fatal(err)
	}
	s, err := server.New(context.Background(), c, server.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fenced := httptest.NewServer(s.Proxy())
	defer fenced.Close()
	guardedURL, stopServing := serveForBench(b, s)
	defer stopServing()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	body := strings.Repeat("x", 40)
	send := func(b *testing.B, target, token string, want int) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequest("POST", target+"/send", strings.NewReader(body))
				if token != "" {
					req.Header.Set(gateway.TokenHeader, token)
				}
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					b.Fatalf("status %d, want %d", resp.StatusCode, want)
				}
			}
		})
	}
	// Set the HWM to 5 once.
	req, _ := http.NewRequest("POST", fenced.URL+"/send", strings.NewReader(body))
	req.Header.Set(gateway.TokenHeader, "5")
	resp, err := client.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("setup write: %v %v", resp, err)
	}
	resp.Body.Close()

	// A lease on "leased": its writes are delivered before the grant may
	// lapse, acknowledged by the upstream's TCP.
	control := httptest.NewServer(s.Control())
	defer control.Close()
	lr, err := http.Post(control.URL+"/v1/leases/leased/acquire", "application/json",
		strings.NewReader(`{"holder":"bench","ttl_seconds":3600}`))
	if err != nil || lr.StatusCode != http.StatusOK {
		b.Fatalf("acquire: %v %v", lr, err)
	}
	var lease struct {
		Token string `json:"token"`
	}
	json.NewDecoder(lr.Body).Decode(&lease)
	lr.Body.Close()
	leasedURL := fenced.URL + "/leased"

	b.Run("baseline=bare-reverseproxy", func(b *testing.B) { send(b, bare.URL, "", http.StatusOK) })
	b.Run("fencegw=admit-leased", func(b *testing.B) { send(b, leasedURL, lease.Token, http.StatusOK) })
	b.Run("fencegw=admit-current-epoch", func(b *testing.B) { send(b, fenced.URL, "5", http.StatusOK) })
	b.Run("fencegw=refuse-stale", func(b *testing.B) { send(b, fenced.URL, "4", http.StatusPreconditionFailed) })
	b.Run("fencegw=admit-current-epoch,guarded", func(b *testing.B) { send(b, guardedURL, "5", http.StatusOK) })
	b.Run("fencegw=refuse-stale,guarded", func(b *testing.B) { send(b, guardedURL, "4", http.StatusPreconditionFailed) })
}

// serveForBench serves s on loopback ports with Serve and returns the
// proxy's URL and a function that stops serving.
func serveForBench(b testing.TB, s *server.Server) (string, func()) {
	ls := server.Listeners{Proxy: listenLoopback(b), Control: listenLoopback(b)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ls, nil) }()
	return "http://" + ls.Proxy.Addr().String(), func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("serve: %v", err)
		}
	}
}

func listenLoopback(tb testing.TB) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return ln
}
