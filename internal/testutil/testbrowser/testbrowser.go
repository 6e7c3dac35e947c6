// Package testbrowser drives a headless Chromium for tests of the gateway's
// web page, through chromedp. It records every request the page makes, and
// every uncaught exception, console error and browser error log entry, so a
// test can assert that a page talks to its own origin only and runs clean.
//
// It runs the Chromium on PATH (chromium, chromium-browser, google-chrome,
// google-chrome-stable; FENCEGW_CHROMIUM names another). Without one the
// test is skipped, or fails when the environment variable CI is "true".
// scripts/test.sh installs Debian's chromium package when it is missing.
package testbrowser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Viewport is the size of the page the browser lays out (CSS pixels).
const (
	ViewportWidth  = 1200
	ViewportHeight = 700
)

// startTimeout bounds the browser's start and its first blank tab.
const startTimeout = 60 * time.Second

// Candidates are the executables FindChromium looks for on PATH, in order.
var Candidates = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// FindChromium returns the path of the browser to run: FENCEGW_CHROMIUM
// when set, else the first of Candidates on PATH.
func FindChromium() (string, error) {
	if p := os.Getenv("FENCEGW_CHROMIUM"); p != "" {
		return exec.LookPath(p)
	}
	for _, name := range Candidates {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("none of %s on PATH (Debian: apt-get install chromium)", strings.Join(Candidates, ", "))
}

// Request is one request the page made (as the browser was about to send
// it: requests a Content-Security-Policy blocks are included).
type Request struct {
	Method, URL string
}

// Browser is one headless Chromium with one tab, ended when the test ends.
type Browser struct {
	ctx context.Context
	out *lockedBuffer

	mu       sync.Mutex
	requests []Request
	problems []string
}

// Start runs a headless Chromium for t and returns it with a blank tab of
// ViewportWidth×ViewportHeight. It skips t when no browser is installed
// (fails it when CI is "true"). The browser ends when t ends; on failure
// the end of its output is logged.
func Start(t testing.TB) *Browser {
	t.Helper()
	path, err := FindChromium()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("testbrowser: no browser to run with CI=true: %v", err)
		}
		t.Skipf("testbrowser: no browser (set CI=true to fail instead): %v", err)
	}
	b := &Browser{out: &lockedBuffer{}}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root in containers
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(ViewportWidth, ViewportHeight),
		chromedp.CombinedOutput(b.out),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithListener(b.record))
	b.ctx = ctx
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		if t.Failed() {
			t.Logf("testbrowser: end of the browser's output:\n%s", b.out.tail(4096))
		}
	})
	// The first Do starts the browser; it must not run on a context with a
	// deadline (that would end the browser), so it is bounded by a timer.
	started := make(chan error, 1)
	go func() {
		started <- chromedp.Do(ctx, chromedp.EmulateViewport(ViewportWidth, ViewportHeight))
	}()
	select {
	case err = <-started:
	case <-time.After(startTimeout):
		cancel()
		err = <-started
	}
	if err != nil {
		t.Fatalf("testbrowser: starting %s: %v\n%s", path, err, b.out.tail(4096))
	}
	return b
}

// Context is the chromedp context of the browser's tab: pass it (or a
// context derived from it, with a timeout) to chromedp.Run and chromedp.Do.
func (b *Browser) Context() context.Context { return b.ctx }

// ContextFor is a context for the browser's actions that ends with t or
// after d.
func (b *Browser) ContextFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(b.ctx, d)
	t.Cleanup(cancel)
	return ctx
}

// record keeps the events tests assert on. It runs in the tab's event loop:
// it only appends.
func (b *Browser) record(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if ev.Request != nil {
			b.requests = append(b.requests, Request{Method: ev.Request.Method, URL: ev.Request.URL})
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += " " + d.Exception.Description
		}
		b.problems = append(b.problems, fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber+1, text))
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				var str string
				if json.Unmarshal(a.Value, &str) == nil {
					args = append(args, str)
				} else if a.Value != nil {
					args = append(args, string(a.Value))
				} else {
					args = append(args, a.Description)
				}
			}
			b.problems = append(b.problems, "console."+string(ev.Type)+": "+strings.Join(args, " "))
		}
	case *log.EventEntryAdded:
		// Failed loads (a 404 the page expects and handles) are logged by
		// the network source: they are requests, not problems. Security
		// (CSP) and other errors are problems.
		if e := ev.Entry; e != nil && e.Level == log.EntryLevelError && e.Source != log.EntrySourceNetwork {
			b.problems = append(b.problems, fmt.Sprintf("browser log (%s): %s %s", e.Source, e.Text, e.URL))
		}
	}
}

// Requests returns every request the tab made so far, in order.
func (b *Browser) Requests() []Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Request(nil), b.requests...)
}

// RequestsOutside returns the requests to any origin but origin (e.g.
// "http://127.0.0.1:40123"); data: URLs, which leave nothing, are not
// counted.
func (b *Browser) RequestsOutside(origin string) []string {
	var out []string
	for _, r := range b.Requests() {
		u, err := url.Parse(r.URL)
		if err == nil && u.Scheme == "data" {
			continue
		}
		if err != nil || u.Scheme+"://"+u.Host != origin {
			out = append(out, r.Method+" "+r.URL)
		}
	}
	return out
}

// Problems returns the uncaught exceptions, console errors and error log
// entries (CSP violations among them) the tab reported so far.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...)
}

// Screenshot saves a PNG of the whole page at path.
func (b *Browser) Screenshot(ctx context.Context, path string) error {
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		return errors.New("testbrowser: the screenshot is not a PNG")
	}
	return os.WriteFile(path, png, 0o644)
}

// lockedBuffer keeps the browser's output for failure reports.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// tail returns the last n bytes of the output, without the D-Bus
// complaints a browser in a container prints by the dozen.
func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var keep []string
	for line := range strings.Lines(l.buf.String()) {
		if !strings.Contains(line, "dbus/") {
			keep = append(keep, line)
		}
	}
	s := strings.Join(keep, "")
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}
