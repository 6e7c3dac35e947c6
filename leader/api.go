package leader

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
	"strconv"
	"strings"
	"time"
)

// APIError is an answer of the lease API other than success, with the
// members of its application/problem+json body.
//
// A 409 or 404 to a renew or release means the lease is no longer this
// holder's (taken, or gone from the store): such an error wraps
// ErrLeaseLost, and the Elector steps down and campaigns again. Other 4xx
// answers except 408, 409, 425 and 429 (such as 400, 401, 403, and a 404 to
// an acquire) mean the configuration is wrong (endpoint, name, holder or
// API key, including a 403 lease-owned: the lease is another key's): the
// Elector does not retry them and Run returns the error. So does a 409
// epoch-exhausted to an acquire: the lease name has no epoch left, and
// only another name helps. Everything else (5xx, 408, 425, 429, another 409
// to an acquire) is retried.
type APIError struct {
	Op     string // "acquire", "renew" or "release"
	Lease  string // the lease's name
	Status int    // the HTTP status

	Type   string // the problem type, such as urn:fencegw:problem:lease-held
	Title  string
	Detail string

	// Holder, ExpiresAt and CurrentEpoch describe the lease as the
	// authority has it, when the answer says (a 409 does). ExpiresAt is on
	// the authority's clock: informational, never compared with ours.
	Holder       string
	ExpiresAt    time.Time
	CurrentEpoch int64
	// RetryAfter is the answer's Retry-After header; zero when absent.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "leader: %s lease %q: %d %s", e.Op, e.Lease, e.Status, http.StatusText(e.Status))
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	} else if e.Title != "" {
		b.WriteString(": " + e.Title)
	}
	return b.String()
}

// Unwrap returns ErrLeaseLost for a 409 or 404 to a renew or release.
func (e *APIError) Unwrap() error {
	if e.lost() {
		return ErrLeaseLost
	}
	return nil
}

// lost reports whether the answer says the lease is not this holder's.
func (e *APIError) lost() bool {
	return e.Op != opAcquire && (e.Status == http.StatusConflict || e.Status == http.StatusNotFound)
}

// typeEpochExhausted is the problem type of an acquire refused because the
// lease name has no epoch left.
const typeEpochExhausted = "urn:fencegw:problem:epoch-exhausted"

// fatal reports whether retrying cannot help: the request or the
// credentials are wrong, or the lease name is spent.
func (e *APIError) fatal() bool {
	if e.Type == typeEpochExhausted {
		return true
	}
	switch e.Status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	}
	return !e.lost() && e.Status >= 400 && e.Status < 500
}

// isFatal reports whether err is an *APIError that retrying cannot fix.
func isFatal(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.fatal()
}

// isHeld reports whether err is an acquire refused because another holder
// has the lease.
func isHeld(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Op == opAcquire && ae.Status == http.StatusConflict && !ae.fatal()
}

// retryAfter returns the Retry-After of an *APIError in err, or zero.
func retryAfter(err error) time.Duration {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.RetryAfter
	}
	return 0
}

const (
	opAcquire = "acquire"
	opRenew   = "renew"
	opRelease = "release"
)

// maxAnswer bounds the bytes read from an answer.
const maxAnswer = 1 << 20

// leaseState is the body of the lease API's successful answers.
type leaseState = wire.LeaseState

// problemMembers are the members of a problem+json body the client reads:
// a body whose other members do not fit wire.Problem is read all the same.
var problemMembers = map[string]bool{"type": true, "title": true, "detail": true, "holder": true,
	"expires_at": true, "current_epoch": true}

// readProblem reads a problem document into p, reporting whether the
// members the client reads were read.
func readProblem(data []byte, p *wire.Problem) bool {
	err := json.Unmarshal(data, p)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && !problemMembers[te.Field] {
		return true
	}
	return err == nil
}

// api calls the lease endpoints for one lease and holder.
type api struct {
	client *http.Client
	base   *url.URL
	key    string
	name   string
	holder string
}

func newAPI(c Config, client *http.Client) (*api, error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return nil, &ConfigError{Field: "Endpoint", Reason: err.Error()}
	}
	return &api{client: client, base: u, key: c.APIKey, name: c.Name, holder: c.Holder}, nil
}

// acquire asks for the lease for ttl.
func (a *api) acquire(ctx context.Context, ttl time.Duration) (leaseState, error) {
	body := struct {
		Holder     string  `json:"holder"`
		TTLSeconds float64 `json:"ttl_seconds"`
	}{a.holder, ttl.Seconds()}
	var st leaseState
	if err := a.post(ctx, opAcquire, body, &st); err != nil {
		return leaseState{}, err
	}
	if err := a.check(opAcquire, st, 0); err != nil {
		return leaseState{}, err
	}
	return st, nil
}

// renew extends the lease held at epoch.
func (a *api) renew(ctx context.Context, epoch int64) (leaseState, error) {
	var st leaseState
	if err := a.post(ctx, opRenew, a.holderEpoch(epoch), &st); err != nil {
		return leaseState{}, err
	}
	if err := a.check(opRenew, st, epoch); err != nil {
		return leaseState{}, err
	}
	return st, nil
}

// release ends the lease held at epoch.
func (a *api) release(ctx context.Context, epoch int64) error {
	return a.post(ctx, opRelease, a.holderEpoch(epoch), nil)
}

func (a *api) holderEpoch(epoch int64) any {
	return struct {
		Holder string     `json:"holder"`
		Epoch  wire.Epoch `json:"epoch"`
	}{a.holder, wire.Epoch(epoch)}
}

// check refuses a successful answer that does not grant this holder the
// lease (at epoch, when epoch is not zero).
func (a *api) check(op string, st leaseState, epoch int64) error {
	switch {
	case st.Epoch <= 0:
		return fmt.Errorf("leader: %s lease %q: the answer has no epoch", op, a.name)
	case st.Holder != a.holder:
		return fmt.Errorf("leader: %s lease %q: the answer names holder %q, not %q", op, a.name, st.Holder, a.holder)
	case st.Name != "" && st.Name != a.name:
		return fmt.Errorf("leader: %s lease %q: the answer is for lease %q", op, a.name, st.Name)
	case epoch != 0 && int64(st.Epoch) != epoch:
		return fmt.Errorf("leader: %s lease %q: %w: renewed at epoch %d, held %d", op, a.name, ErrLeaseLost, st.Epoch, epoch)
	}
	return nil
}

// url returns the endpoint of op on this lease.
func (a *api) url(op string) string {
	u := *a.base
	path := strings.TrimSuffix(u.Path, "/")
	raw := strings.TrimSuffix(u.EscapedPath(), "/")
	u.Path = path + "/v1/leases/" + a.name + "/" + op
	u.RawPath = raw + "/v1/leases/" + url.PathEscape(a.name) + "/" + op
	return u.String()
}

// post sends body as JSON to op's endpoint and decodes a 200 answer into
// out (when not nil). Any other answer is an *APIError; a failed exchange is
// returned wrapped.
func (a *api) post(ctx context.Context, op string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("leader: %s lease %q: %w", op, a.name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url(op), bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("leader: %s lease %q: %w", op, a.name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, application/problem+json")
	if a.key != "" {
		req.Header.Set("Authorization", "Bearer "+a.key)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("leader: %s lease %q: %w", op, a.name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("leader: %s lease %q: read the answer: %w", op, a.name, err)
	}
	switch {
	case resp.StatusCode == http.StatusNoContent || (resp.StatusCode == http.StatusOK && out == nil):
		return nil
	case resp.StatusCode == http.StatusOK:
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("leader: %s lease %q: decode the answer: %w", op, a.name, err)
		}
		return nil
	}
	return a.apiError(op, resp, data)
}

// apiError builds the *APIError of an unsuccessful answer.
func (a *api) apiError(op string, resp *http.Response, data []byte) *APIError {
	e := &APIError{Op: op, Lease: a.name, Status: resp.StatusCode,
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	var p wire.Problem
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if (mt == wire.ProblemContentType || mt == "application/json") && readProblem(data, &p) {
		e.Type, e.Title, e.Detail, e.Holder = p.Type, p.Title, p.Detail, p.Holder
		if p.ExpiresAt != nil {
			e.ExpiresAt = *p.ExpiresAt
		}
		if p.CurrentEpoch != nil {
			e.CurrentEpoch = int64(*p.CurrentEpoch)
		}
	} else {
		const maxDetail = 200
		e.Detail = strings.TrimSpace(string(data[:min(len(data), maxDetail)]))
	}
	return e
}

// parseRetryAfter reads a Retry-After header: delay seconds or an HTTP date.
// It returns zero when the header is absent, invalid or in the past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, int64(maxLeaseDuration/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxLeaseDuration)
	}
	return 0
}
