package gateway_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
)

// BenchmarkProxy compares, side by side in one run, a bare
// httputil.ReverseProxy (the baseline) with fencegw admitting writes at the
// current epoch and refusing stale ones, without and with the framing guard
// of fencegw serve (GuardListener), all over loopback HTTP/1.1 to the same
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
		Transport: gateway.NewTransport(gateway.TransportOptions{}),
	})
	defer bare.Close()

	store, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	table, _ := policy.NewTable([]*policy.Route{{Prefix: "/", Upstream: u, Tokens: policy.TokensRaw,
		Verifier: tokens.RawVerifier{}, Resource: mustTemplate(b, "bench")}})
	h := gateway.New(gateway.Options{Routes: gateway.NewRoutes(table),
		Fence: tokens.NewFence(store, tokens.FenceOptions{}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	fenced := httptest.NewServer(h)
	defer fenced.Close()
	// As fencegw serve runs it: framing guarded.
	guarded := httptest.NewUnstartedServer(h)
	guarded.Listener = gateway.GuardListener(guarded.Listener, gateway.GuardOptions{})
	guarded.Config.ConnContext = gateway.ConnContext
	guarded.Start()
	defer guarded.Close()

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

	b.Run("baseline=bare-reverseproxy", func(b *testing.B) { send(b, bare.URL, "", http.StatusOK) })
	b.Run("fencegw=admit-current-epoch", func(b *testing.B) { send(b, fenced.URL, "5", http.StatusOK) })
	b.Run("fencegw=refuse-stale", func(b *testing.B) { send(b, fenced.URL, "4", http.StatusPreconditionFailed) })
	b.Run("fencegw=admit-current-epoch,guarded", func(b *testing.B) { send(b, guarded.URL, "5", http.StatusOK) })
	b.Run("fencegw=refuse-stale,guarded", func(b *testing.B) { send(b, guarded.URL, "4", http.StatusPreconditionFailed) })
}

func mustTemplate(tb testing.TB, s string) *tokens.Template {
	t, err := tokens.ParseTemplate(s)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}
