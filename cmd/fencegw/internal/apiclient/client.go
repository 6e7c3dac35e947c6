// Package apiclient calls fencegw's control API over HTTP, one JSON request
// at a time. It is the client of the fencegw command's lease, token and
// probe subcommands, and of the demo, which calls the control API as those
// commands do. Leaders use package leader instead.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/fencegw/fencegw/wire"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MaxAnswer bounds the bytes read from an answer's body.
const MaxAnswer = 1 << 20

// Client calls one gateway's control API.
type Client struct {
	// Base is the control API's base URL, such as http://127.0.0.1:8081;
	// the paths given to Do are appended to it.
	Base string
	// Key, when set, is sent as a bearer token (Authorization: Bearer).
	Key string
	// HTTP sends the requests; nil means http.DefaultClient.
	HTTP *http.Client
}

// New returns a client of the control API at base, which must be an
// absolute http or https URL with a host. The HTTP client has its own
// transport, configured by t (see TLS), bounds each exchange by timeout
// (no bound when zero) and does not follow redirects: a control API
// answers itself. Nothing is dialled.
func New(base, key string, t TLS, timeout time.Duration) (*Client, error) {
	u, err := ParseBase(base)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "https" && !t.IsZero() {
		return nil, fmt.Errorf("TLS options given, but the control API URL %q is not https", base)
	}
	tc, err := t.Config()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if tc != nil {
		tr.TLSClientConfig = tc
	}
	return &Client{Base: base, Key: key, HTTP: &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}, nil
}

// ParseBase parses a control API base URL: absolute, http or https, with
// a host, and without a query or fragment.
func ParseBase(base string) (*url.URL, error) {
	u, err := url.Parse(base)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https"):
		return nil, fmt.Errorf("control API URL %q: want http:// or https://", base)
	case u.Host == "":
		return nil, fmt.Errorf("control API URL %q: no host", base)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("control API URL %q: a base URL has no query or fragment", base)
	}
	return u, nil
}

// Close closes the idle connections of the client's transport.
func (c *Client) Close() { c.httpClient().CloseIdleConnections() }

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

// URL returns the address of path (which starts with /) on the control API.
func (c *Client) URL(path string) string { return strings.TrimRight(c.Base, "/") + path }

// Do sends one request to path, with body (when not nil) as JSON, and
// returns the answer, whatever its status. An error means there is no
// answer: the request could not be sent or its answer read.
func (c *Client) Do(ctx context.Context, method, path string, body any) (Answer, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return Answer{}, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL(path), r)
	if err != nil {
		return Answer{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.Key)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return Answer{}, err
	}
	return ReadAnswer(resp)
}

// GetJSON reads the resource at path into out. Any answer but 200 is an
// error naming it.
func (c *Client) GetJSON(ctx context.Context, path string, out any) error {
	a, err := c.Do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if a.Status != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, a)
	}
	if err := json.Unmarshal(a.Body, out); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// Answer is an HTTP answer from fencegw: the control API's, or the
// proxy's.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte // at most MaxAnswer bytes
	// Problem is the decoded body of an application/problem+json answer;
	// nil otherwise.
	Problem *wire.Problem
}

// ReadAnswer reads and closes resp's body (up to MaxAnswer bytes) and
// decodes a problem body.
func ReadAnswer(resp *http.Response) (Answer, error) {
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer))
	if err != nil {
		return Answer{}, errors.Join(errors.New("read the answer"), err)
	}
	a := Answer{Status: resp.StatusCode, Header: resp.Header, Body: data}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == wire.ProblemContentType {
		var p wire.Problem
		if json.Unmarshal(data, &p) == nil {
			a.Problem = &p
		}
	}
	return a, nil
}

// String is the answer in one line: the status, then the problem's detail
// or the start of the body.
func (a Answer) String() string {
	s := fmt.Sprintf("%d %s", a.Status, http.StatusText(a.Status))
	if a.Problem != nil && a.Problem.Detail != "" {
		return s + ": " + oneLine(a.Problem.Detail)
	}
	if b := strings.TrimSpace(string(a.Body)); b != "" {
		return s + ": " + oneLine(b[:min(len(b), 200)])
	}
	return s
}

// oneLine folds every run of white space in s into one space.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
