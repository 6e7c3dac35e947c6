package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// proc is a running fencegw process.
type proc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	proxy  string // http://host:port
	api    string
	done   chan struct{}
	err    error
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freeAddr returns a loopback address free at the time of the call.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs `fencegw serve` with args plus fresh listen addresses, and
// waits until its control API answers.
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	return startEnv(t, nil, args...)
}

// startEnv is start with extra environment variables (NAME=value).
func startEnv(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	proxyAddr, apiAddr := freeAddr(t), freeAddr(t)
	args = append([]string{"serve", "--listen", proxyAddr, "--api-listen", apiAddr}, args...)
	p := &proc{cmd: exec.Command(binary, args...), stderr: &syncBuffer{}, proxy: "http://" + proxyAddr,
		api: "http://" + apiAddr, done: make(chan struct{})}
	p.cmd.Stderr = p.stderr
	p.cmd.Env = append(os.Environ(), env...)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("fencegw stderr:\n%s", p.stderr.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.api + "/healthz")
		if err == nil {
			resp.Body.Close()
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("fencegw exited early: %v\n%s", p.err, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("fencegw did not come up:\n%s", p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatal("fencegw did not exit")
	}
	return p.cmd.ProcessState.ExitCode()
}

// post sends a write to url with a Fencing-Token and a Fencing-Resource
// (none where empty) and returns the status.
func post(t *testing.T, url, token, resource string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader("x"))
	if token != "" {
		req.Header.Set("Fencing-Token", token)
	}
	if resource != "" {
		req.Header.Set("Fencing-Resource", resource)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// okUpstream is an upstream that answers every request 204, closed when
// the test ends.
func okUpstream(t *testing.T) *httptest.Server {
	return newRecorder(t, http.StatusNoContent).srv
}

// exitCode is the exit code of a command that returned err (-1 if it did
// not run).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// holdingGateway is a gateway whose upstream holds the write it receives
// until finish lets it answer 202.
type holdingGateway struct {
	*proc
	entered chan struct{} // closed when the upstream holds the write
	release func()
	status  chan int // the write's status
}

// startHolding starts a holdingGateway over a fresh embedded store, its
// one route /w/ taking raw epochs.
func startHolding(t *testing.T) *holdingGateway {
	t.Helper()
	g := &holdingGateway{entered: make(chan struct{}), status: make(chan int, 1)}
	released := make(chan struct{})
	var once sync.Once
	g.release = func() { once.Do(func() { close(released) }) }
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(g.entered)
		<-released
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(up.Close)
	t.Cleanup(g.release) // before up.Close, which waits for the write
	g.proc = start(t, "--store", filepath.Join(t.TempDir(), "s.db"), "--route", "/w/="+up.URL)
	return g
}

// sigtermMidWrite sends a write and, once the upstream holds it, SIGTERM.
func (g *holdingGateway) sigtermMidWrite(t *testing.T) {
	t.Helper()
	go func() { g.status <- post(t, g.proxy+"/w/x", "1", "r") }()
	<-g.entered
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// finish lets the upstream answer the write it holds, and fails t unless
// the write was answered 202 and the gateway then exited 0.
func (g *holdingGateway) finish(t *testing.T) {
	t.Helper()
	g.release()
	if s := <-g.status; s != http.StatusAccepted {
		t.Fatalf("in-flight write = %d, want 202", s)
	}
	if code := g.wait(t); code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, g.stderr.String())
	}
}

// recorder is an upstream that answers every request with one status and
// records the requests it receives.
type recorder struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []string      // "METHOD /escaped/path X-Tenant=v,v Fencing-Resource=r"
	header []http.Header // the header of each request, in the same order
}

// newRecorder starts a recorder answering status, closed when the test
// ends.
func newRecorder(t *testing.T, status int) *recorder {
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		line := fmt.Sprintf("%s %s X-Tenant=%s Fencing-Resource=%s", r.Method, r.URL.EscapedPath(),
			strings.Join(r.Header.Values("X-Tenant"), ","), r.Header.Get("Fencing-Resource"))
		rec.mu.Lock()
		rec.got = append(rec.got, line)
		rec.header = append(rec.header, r.Header.Clone())
		rec.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

// lines returns the requests received so far, one line each.
func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// values returns the value of the header field name in each request
// received so far ("" where it was absent).
func (r *recorder) values(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var v []string
	for _, h := range r.header {
		v = append(v, h.Get(name))
	}
	return v
}

// rawExchange sends raw request bytes to addr and returns the status and
// the problem type of the answer ("" if none).
func rawExchange(t *testing.T, addr, raw string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(addr, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read answer to %q: %v", raw, err)
	}
	defer resp.Body.Close()
	var p struct {
		Type string `json:"type"`
	}
	if resp.Header.Get("Content-Type") == "application/problem+json" {
		json.NewDecoder(resp.Body).Decode(&p)
	}
	return resp.StatusCode, p.Type
}

// rawPost is a request of method for target with the header lines given
// and a two-byte body, as sent on the wire.
func rawPost(method, target string, headers ...string) string {
	return method + " " + target + " HTTP/1.1\r\nHost: gw\r\nConnection: close\r\nContent-Length: 2\r\n" +
		strings.Join(headers, "\r\n") + "\r\n\r\nhi"
}

// signingGateway starts a gateway over a fresh embedded store that signs
// with an EdDSA key file generated by fencegw keys generate, its one route
// /s/ taking signed tokens to upstream. It returns the gateway and a
// function that signs a payload, as given, with that key.
func signingGateway(t *testing.T, upstream string) (*proc, func(payload string) string) {
	t.Helper()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "signing.pem")
	if _, stderr, code := runCLI(t, "keys", "generate", "--out", keyFile); code != 0 {
		t.Fatalf("keys generate: %s", stderr)
	}
	cfg := writeFile(t, dir, "gw.yaml", []byte(fmt.Sprintf("store: %q\nsigning:\n  key_file: %q\nroutes:\n  - prefix: /s/\n    upstream: %q\n",
		filepath.Join(dir, "s.db"), keyFile, upstream)))
	p := start(t, "--config", cfg)
	return p, gatewaySigner(t, p, keyFile)
}

// gatewaySigner returns a function that signs a payload, as given, with the
// gateway's EdDSA key file under the key id its JWKS publishes.
func gatewaySigner(t *testing.T, p *proc, keyFile string) func(payload string) string {
	t.Helper()
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	getJSON(t, p.api+"/.well-known/jwks.json", &set)
	pem, _ := os.ReadFile(keyFile)
	key, err := jwt.ParseEdPrivateKeyFromPEM(pem)
	if err != nil || len(set.Keys) != 1 {
		t.Fatalf("key: %v, %d published", err, len(set.Keys))
	}
	header := fmt.Sprintf(`{"alg":"EdDSA","typ":"JWT","kid":%q}`, set.Keys[0].Kid)
	b64 := base64.RawURLEncoding.EncodeToString
	return func(payload string) string {
		input := b64([]byte(header)) + "." + b64([]byte(payload))
		sig, err := jwt.SigningMethodEdDSA.Sign(input, key)
		if err != nil {
			t.Fatal(err)
		}
		return input + "." + b64(sig)
	}
}

// getJSON GETs url and decodes its JSON body into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %d: %v", url, resp.StatusCode, err)
	}
}

// writeFile writes data to the file name in dir and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
