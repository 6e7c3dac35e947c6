package leader

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestSameOrigin(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"http://gw:8080/w/x", "http://gw:8080/other?q=1", true},
		{"http://gw/w", "http://gw:80/w", true},
		{"https://gw/w", "https://gw:443/w", true},
		{"HTTP://GW:8080/w", "http://gw:8080/w", true},
		{"http://[::1]:8080/w", "http://[::1]:8080/v", true},
		{"http://gw:8080/w", "http://gw:8081/w", false},
		{"http://gw:8080/w", "http://evil:8080/w", false},
		{"http://gw/w", "http://gw.evil/w", false},
		{"https://gw/w", "http://gw/w", false},
		{"https://gw:443/w", "http://gw:443/w", false},
		{"http://127.0.0.1:8080/w", "http://localhost:8080/w", false},
		{"ftp://gw/w", "ftp://gw/w", false},
		{"http:///w", "http:///w", false},
	} {
		a, _ := url.Parse(c.a)
		b, _ := url.Parse(c.b)
		if got := sameOrigin(a, b); got != c.same {
			t.Errorf("sameOrigin(%s, %s) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}

func TestFirstURL(t *testing.T) {
	first, _ := http.NewRequest(http.MethodPost, "http://gw:8080/w/a", nil)
	hop, _ := http.NewRequest(http.MethodPost, "http://elsewhere/b", nil)
	hop.Response = &http.Response{Request: first}
	next, _ := http.NewRequest(http.MethodPost, "http://gw:8080/w/c", nil)
	next.Response = &http.Response{Request: hop}
	for _, r := range []*http.Request{first, hop, next} {
		if u, ok := firstURL(r); !ok || u != first.URL {
			t.Errorf("firstURL(%s) = %v, %v; want %s", r.URL, u, ok, first.URL)
		}
	}
	// A response that names no request: the chain's origin is unknown.
	orphan, _ := http.NewRequest(http.MethodPost, "http://gw:8080/w/d", nil)
	orphan.Response = &http.Response{}
	if u, ok := firstURL(orphan); ok {
		t.Errorf("firstURL of an orphan redirect = %v, want unknown", u)
	}
}

// TestTokenNotSentToUnknownOrigin: a redirect whose chain cannot be
// followed back (a base RoundTripper that names no request in its
// responses) is sent without the token, also one the caller set.
func TestTokenNotSentToUnknownOrigin(t *testing.T) {
	e := &Elector{cfg: Config{}.withDefaults()}
	e.cur = &term{Term: Term{Epoch: 3}, deadline: time.Now().Add(time.Hour)}
	var sent []string
	tr := e.Transport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent = append(sent, r.Header.Get(TokenHeader))
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody}, nil
	}))
	req, _ := http.NewRequest(http.MethodPost, "http://gw:8080/w", strings.NewReader("x"))
	req.Header.Set(TokenHeader, "set-by-the-caller")
	req.Response = &http.Response{}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	if len(sent) != 1 || sent[0] != "" {
		t.Fatalf("sent Fencing-Token %q, want none", sent)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
