package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/server"
)

// TestDrainKeepsEpochsApart: at one replica, a write at epoch 6 to a
// resource is not forwarded while the write at epoch 5 to it is still at
// the upstream; it reaches the upstream once 5 is answered. A write at 5
// that comes after 6 was admitted is refused, and nothing of it arrives.
func TestDrainKeepsEpochsApart(t *testing.T) {
	var mu sync.Mutex
	var events []string
	note := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
	seen := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(events) }
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := r.Header.Get("X-Test-Epoch") // the gateway does not forward the token
		note("start " + e)
		if e == "5" {
			arrived <- struct{}{}
			<-release
		}
		note("end " + e)
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(up.Close)
	var releaseOnce sync.Once
	release5 := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(release5) // before up.Close, which waits for its handlers
	c := embeddedConfig(t)
	c.Routes = []config.Route{{Prefix: "/w/", Upstream: up.URL, Tokens: config.TokensRaw, Resource: "r"}}
	srv := assemble(t, c, server.Options{})
	url, stop := serveForBench(t, srv)
	t.Cleanup(stop)

	write := func(epoch string) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, url+"/w/send", nil)
			req.Header.Set(gateway.TokenHeader, epoch)
			req.Header.Set("X-Test-Epoch", epoch)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				ch <- answer{}
				return
			}
			resp.Body.Close()
			ch <- answer{status: resp.StatusCode}
		}()
		return ch
	}
	five := write("5")
	select {
	case <-arrived:
	case a := <-five:
		t.Fatalf("write at 5 answered %d before reaching the upstream", a.status)
	}
	six := write("6")
	// Once 6 is admitted, a third write at 5 is stale, and 6 must wait.
	for srv.Fence().Cached("r") != 6 {
		time.Sleep(time.Millisecond)
	}
	if a := do(t, http.MethodPost, url+"/w/send", map[string]string{gateway.TokenHeader: "5"}, ""); a.status != http.StatusPreconditionFailed {
		t.Fatalf("a write at 5 after 6 was admitted: %d, want 412", a.status)
	}
	time.Sleep(100 * time.Millisecond) // room for 6 to overtake, were it able to
	if got := seen(); !slices.Equal(got, []string{"start 5"}) {
		t.Fatalf("while 5 is at the upstream, it saw %q", got)
	}
	release5()
	if a := <-five; a.status != http.StatusAccepted {
		t.Fatalf("write at 5: %d", a.status)
	}
	if a := <-six; a.status != http.StatusAccepted {
		t.Fatalf("write at 6: %d", a.status)
	}
	if got, want := seen(), []string{"start 5", "end 5", "start 6", "end 6"}; !slices.Equal(got, want) {
		t.Fatalf("the upstream saw %q, want %q", got, want)
	}
}

// TestDrainReleasesOnAnswer: a write counts as in flight until the
// upstream's answer begins, not until its body has streamed: a write at 6
// reaches the upstream while the answer to 5 is still streaming.
func TestDrainReleasesOnAnswer(t *testing.T) {
	release := make(chan struct{})
	var releaseOnce sync.Once
	release5 := func() { releaseOnce.Do(func() { close(release) }) }
	sixArrived := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Epoch") == "6" {
			close(sixArrived)
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.WriteHeader(http.StatusOK)
		w.Write([]byte("first part\n"))
		http.NewResponseController(w).Flush()
		<-release
		w.Write([]byte("last part\n"))
	}))
	t.Cleanup(up.Close)
	t.Cleanup(release5)
	c := embeddedConfig(t)
	c.Routes = []config.Route{{Prefix: "/w/", Upstream: up.URL, Tokens: config.TokensRaw, Resource: "r"}}
	url, stop := serveForBench(t, assemble(t, c, server.Options{}))
	t.Cleanup(stop)

	req, _ := http.NewRequest(http.MethodPost, url+"/w/send", nil)
	req.Header.Set(gateway.TokenHeader, "5")
	req.Header.Set("X-Test-Epoch", "5")
	resp, err := http.DefaultClient.Do(req) // returns once the head is back
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("write at 5: %d", resp.StatusCode)
	}
	if a := do(t, http.MethodPost, url+"/w/send", map[string]string{gateway.TokenHeader: "6", "X-Test-Epoch": "6"}, ""); a.status != http.StatusAccepted {
		t.Fatalf("write at 6 while 5's answer streams: %d, want 202", a.status)
	}
	<-sixArrived
	release5()
	if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "first part\nlast part\n" {
		t.Fatalf("the answer to 5: %q, %v", b, err)
	}
}
