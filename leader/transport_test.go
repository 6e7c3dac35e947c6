package leader_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/leader"
)

// postTo sends a write to path through client, with header values set
// (name, value pairs), and returns the status and the whole body.
func postTo(t *testing.T, client *http.Client, rawURL string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, rawURL, strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: read the body: %v", rawURL, err)
	}
	return resp.StatusCode, string(body)
}

// leading starts an Elector for name on g and waits until it leads.
func leading(t *testing.T, g *testGateway, name string) (*leader.Elector, *recorder, leader.Term) {
	t.Helper()
	cfg, rec := nodeA(t, g, name)
	// Renew rarely, and no watch: nothing but the Transport should end
	// the term.
	cfg.LeaseDuration, cfg.RenewDeadline, cfg.RenewInterval = 20*time.Second, 15*time.Second, 7*time.Second
	cfg.NoWatch = true
	e, _, s := lead(t, cfg, rec)
	return e, rec, s.term
}

// stillLeading fails the test unless e leads in term.
func stillLeading(t *testing.T, e *leader.Elector, rec *recorder, term leader.Term, after string) {
	t.Helper()
	cur, ok := e.Current()
	if !ok || cur.Epoch != term.Epoch {
		t.Fatalf("after %s: leading = %v at epoch %d, want epoch %d", after, ok, cur.Epoch, term.Epoch)
	}
	select {
	case st := <-rec.stopped:
		t.Fatalf("after %s: stopped leading epoch %d: %v", after, st.term.Epoch, st.reason)
	default:
	}
}

// TestUpstream412DoesNotEndTerm: an upstream behind the gateway answers 412
// itself (an If-Match that failed), in plain text, as a problem of its own
// type, as JSON that is not a problem, or as a problem too large to be the
// gateway's; the caller gets each answer whole and the term goes on. The
// gateway's own stale-epoch 412 then ends it, and the caller still reads
// that answer whole.
func TestUpstream412DoesNotEndTerm(t *testing.T) {
	const name = "invoice-sweeper"
	big := `{"type":"urn:fencegw:problem:stale-epoch","detail":"` + strings.Repeat("x", 70<<10) + `"}`
	answers := map[string]struct{ contentType, body string }{
		"/email/plain":   {"text/plain; charset=utf-8", "precondition failed: ETag \"v7\" does not match"},
		"/email/problem": {"application/problem+json", `{"type":"urn:example:etag-mismatch","title":"If-Match failed","status":412}`},
		"/email/json":    {"application/json", `{"type":"urn:fencegw:problem:stale-epoch"}`},
		"/email/case":    {"application/problem+json", `{"TYPE":"urn:fencegw:problem:stale-epoch"}`},
		"/email/big":     {"application/problem+json", big},
		"/email/empty":   {"application/problem+json", ""},
	}
	g := newGateway(t, name, gatewayOptions{upstream: func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusCreated)
			return
		}
		w.Header().Set("Content-Type", a.contentType)
		w.WriteHeader(http.StatusPreconditionFailed)
		io.WriteString(w, a.body)
	}})
	e, rec, term := leading(t, g, name)
	client := writeClient(t, e)

	for path, a := range answers {
		status, body := postTo(t, client, g.ProxyURL+path)
		if status != http.StatusPreconditionFailed || body != a.body {
			t.Fatalf("%s: %d with a body of %d bytes, want the upstream's 412 and its %d bytes", path, status, len(body), len(a.body))
		}
		stillLeading(t, e, rec, term, "the upstream's 412 at "+path)
	}
	if status, _ := postTo(t, client, g.ProxyURL+"/email/send"); status != http.StatusCreated {
		t.Fatalf("write after the upstream's 412s: %d, want 201", status)
	}

	// Behind node-a's back, node-b is granted epoch 2: the gateway's 412.
	if code, body := g.leaseCall(t, name, "release", map[string]any{"holder": "node-a", "epoch": term.Epoch}); code != http.StatusNoContent {
		t.Fatalf("release: %d %s", code, body)
	}
	if code, body := g.leaseCall(t, name, "acquire", map[string]any{"holder": "node-b", "ttl_seconds": 60}); code != http.StatusOK {
		t.Fatalf("acquire by node-b: %d %s", code, body)
	}
	status, body := postTo(t, client, g.ProxyURL+"/email/send")
	if status != http.StatusPreconditionFailed || !strings.Contains(body, `"type":"`+problem.TypeStaleEpoch+`"`) ||
		!strings.Contains(body, `"current_epoch":"2"`) {
		t.Fatalf("write at the fenced epoch: %d %s, want the gateway's whole stale-epoch problem", status, body)
	}
	if _, ok := e.Current(); ok {
		t.Fatal("still leading when the gateway's 412 reached the caller")
	}
	st := receive(t, rec.stopped, wait, "OnStoppedLeading")
	if !errors.Is(st.reason, leader.ErrFenced) || st.term.Epoch != term.Epoch {
		t.Fatalf("stopped %+v, want epoch %d for ErrFenced", st, term.Epoch)
	}
}

// TestTransportRedirects: the token goes only to the origin a request was
// addressed to. Redirects (302, 307) to another server, or to the gateway
// under another host name, are followed without Fencing-Token, even one the
// caller set; a redirect to the same origin carries it and is admitted.
func TestTransportRedirects(t *testing.T) {
	const name = "invoice-sweeper"
	type seen struct{ method, token string }
	var (
		mu      sync.Mutex
		atOther []seen
	)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		atOther = append(atOther, seen{r.Method, r.Header.Get(leader.TokenHeader)})
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(other.Close)

	var proxyURL string // set once the gateway runs
	var landed []string // Fencing-Epoch of the writes that reached /email/landed
	g := newGateway(t, name, gatewayOptions{upstream: func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/email/away-307":
			http.Redirect(w, r, other.URL+"/in", http.StatusTemporaryRedirect)
		case "/email/away-302":
			http.Redirect(w, r, other.URL+"/in", http.StatusFound)
		case "/email/other-name":
			u, _ := url.Parse(proxyURL)
			http.Redirect(w, r, "http://localhost:"+u.Port()+"/email/landed", http.StatusTemporaryRedirect)
		case "/email/same":
			http.Redirect(w, r, "/email/landed", http.StatusTemporaryRedirect)
		case "/email/same-absolute":
			http.Redirect(w, r, proxyURL+"/email/landed", http.StatusPermanentRedirect)
		case "/email/landed":
			mu.Lock()
			landed = append(landed, r.Header.Get(gateway.EpochHeader))
			mu.Unlock()
			w.WriteHeader(http.StatusCreated)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}})
	proxyURL = g.ProxyURL
	e, rec, term := leading(t, g, name)
	client := writeClient(t, e)

	for _, c := range []struct {
		path   string
		header []string
		status int
		method string // the method that reached the other server ("" none)
	}{
		{"/email/away-307", nil, http.StatusCreated, http.MethodPost},
		{"/email/away-302", nil, http.StatusCreated, http.MethodGet},
		{"/email/away-307", []string{leader.TokenHeader, "set-by-the-caller"}, http.StatusCreated, http.MethodPost},
		// Another host name for the same gateway is another origin: the
		// token stays behind, and the gateway asks for one.
		{"/email/other-name", nil, http.StatusPreconditionRequired, ""},
	} {
		mu.Lock()
		before := len(atOther)
		mu.Unlock()
		status, body := postTo(t, client, g.ProxyURL+c.path, c.header...)
		if status != c.status {
			t.Fatalf("%s: %d %s, want %d", c.path, status, body, c.status)
		}
		mu.Lock()
		got := append([]seen(nil), atOther[before:]...)
		mu.Unlock()
		switch {
		case c.method == "" && len(got) != 0:
			t.Fatalf("%s: the other server received %+v", c.path, got)
		case c.method != "" && (len(got) != 1 || got[0].method != c.method):
			t.Fatalf("%s: the other server received %+v, want one %s", c.path, got, c.method)
		case len(got) == 1 && got[0].token != "":
			t.Fatalf("%s: the other server received Fencing-Token %q", c.path, got[0].token)
		}
		stillLeading(t, e, rec, term, c.path)
	}

	// The same origin, by a relative or an absolute Location: the write is
	// sent again with the token, and the gateway admits it.
	for _, path := range []string{"/email/same", "/email/same-absolute"} {
		if status, body := postTo(t, client, g.ProxyURL+path); status != http.StatusCreated {
			t.Fatalf("%s: %d %s, want 201 from /email/landed", path, status, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := fmt.Sprint(term.Epoch); len(landed) != 2 || landed[0] != want || landed[1] != want {
		t.Fatalf("/email/landed received Fencing-Epoch %q, want %s twice", landed, want)
	}
}
