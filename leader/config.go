package leader

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"
)

// The default timings are Kubernetes' (and the seed article's): a leader
// renews every 5 s, retries every 2 s after a failure, gives up 10 s after
// its last successful renewal, 5 s before a rival may take over at 15 s.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// JitterFactor bounds the jitter added to the wait between acquire attempts:
// a candidate waits between RetryPeriod and (1+JitterFactor)×RetryPeriod.
// RenewDeadline must exceed JitterFactor×RetryPeriod, as in client-go.
const JitterFactor = 1.2

// minLeaseDuration is the shortest lease the token authority grants.
const minLeaseDuration = time.Second

// maxLeaseDuration is the longest lease the token authority grants.
const maxLeaseDuration = 24 * time.Hour

// Config configures an Elector. Zero durations, a nil HTTPClient and a nil
// Logger take their defaults in New; everything else is validated there.
type Config struct {
	// Endpoint is the base URL of fencegw's control API, such as
	// http://127.0.0.1:8081.
	Endpoint string
	// APIKey, when set, is sent as "Authorization: Bearer <APIKey>".
	APIKey string
	// Name is the lease's name, which is also the fenced resource's name.
	Name string
	// Holder is this candidate's identity; unique among the candidates.
	Holder string

	// LeaseDuration is the lease's TTL, sent on acquire (default 15s, at
	// least 1s). A rival may take over this long after the last renewal the
	// authority accepted.
	LeaseDuration time.Duration
	// RenewDeadline: a leader steps down when no renewal succeeded for this
	// long, on its own monotonic clock (default 10s). It must be below
	// LeaseDuration and above JitterFactor×RetryPeriod.
	RenewDeadline time.Duration
	// RetryPeriod is the wait between acquire attempts, after a failed
	// renewal, and after stepping down before campaigning again (default 2s).
	// It also bounds each HTTP call.
	RetryPeriod time.Duration
	// RenewInterval is how often a leader renews (default LeaseDuration/3, or
	// RenewDeadline/2 when that is shorter). It must be below RenewDeadline.
	RenewInterval time.Duration

	// HTTPClient calls the control API. The default has its own connection
	// pool (closed when Run returns) and a Timeout of RetryPeriod. Every call
	// is bounded by a context deadline as well: RetryPeriod, and for a
	// renewal no later than the renew deadline.
	HTTPClient *http.Client

	// Callbacks are told when leading starts and stops.
	Callbacks Callbacks

	// ReleaseOnCancel releases the lease when Run's context is cancelled
	// while leading, so that a rival need not wait for it to expire. The
	// release is sent only after OnStartedLeading returned, so the work has
	// stopped before anyone else may lead.
	ReleaseOnCancel bool

	// NoWatch turns off the lease watch (GET /v1/leases/{name}/watch):
	// the Elector then learns of releases, lapses and takeovers only by
	// polling and renewing, as it does meanwhile when the watch breaks.
	// With the watch, a leader steps down the moment its grant ends, and a
	// candidate campaigns the moment the lease is free.
	NoWatch bool

	// Clock keeps the Elector's deadlines and waits (the system's clock
	// when nil); see Clock.
	Clock Clock

	// Logger receives the Elector's log; slog.Default() when nil.
	Logger *slog.Logger
}

// Callbacks are the Elector's hooks. OnStoppedLeading and OnNewToken run on
// the Elector's own goroutine and must not block: a slow callback delays the
// loop (though never the Transport, which checks the renew deadline itself).
type Callbacks struct {
	// OnStartedLeading runs in its own goroutine when a term starts. ctx is
	// cancelled when the term ends; the work must stop then. The Elector
	// does not campaign again, and Run does not return, until it returned.
	OnStartedLeading func(ctx context.Context, term Term)
	// OnStoppedLeading is called once per term, after the term's context
	// was cancelled and its token cleared, with the reason: an error wrapping
	// ErrLeaseLost (renewal refused, or renew deadline passed), ErrFenced (the
	// gateway refused the term's epoch as stale, with 412), the reason given
	// to StepDown, the Run context's error, or an *APIError the Elector
	// cannot recover from.
	OnStoppedLeading func(term Term, reason error)
	// OnNewToken, optional, is called after each successful renewal with the
	// term and its fresh token.
	OnNewToken func(term Term)
}

// ConfigError reports an invalid Config field.
type ConfigError struct {
	Field  string // the Config field, such as "RenewDeadline"
	Reason string
}

func (e *ConfigError) Error() string {
	return "leader: Config." + e.Field + ": " + e.Reason
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	if c.RenewInterval == 0 {
		c.RenewInterval = min(c.LeaseDuration/3, c.RenewDeadline/2)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate checks c as New will use it, after defaults: the endpoint is an
// absolute http(s) URL, Name and Holder are set, every duration is
// positive, and LeaseDuration > RenewDeadline > JitterFactor×RetryPeriod
// and RenewInterval < RenewDeadline. The error is a *ConfigError naming the
// first bad field.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if c.Endpoint == "" {
		return bad("Endpoint", "empty; want the control API's base URL, such as http://127.0.0.1:8081")
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return bad("Endpoint", "%v", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("Endpoint", "%q is not an absolute http or https URL", c.Endpoint)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return bad("Endpoint", "%q has a query or fragment", c.Endpoint)
	}
	if c.Name == "" {
		return bad("Name", "empty; want the lease's (and resource's) name")
	}
	if c.Holder == "" {
		return bad("Holder", "empty; want this candidate's identity")
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"LeaseDuration", c.LeaseDuration}, {"RenewDeadline", c.RenewDeadline},
		{"RetryPeriod", c.RetryPeriod}, {"RenewInterval", c.RenewInterval},
	} {
		if d.v <= 0 {
			return bad(d.field, "must be positive, got %s", d.v)
		}
	}
	if c.LeaseDuration < minLeaseDuration || c.LeaseDuration > maxLeaseDuration || c.LeaseDuration%time.Millisecond != 0 {
		// The token authority takes whole milliseconds and rounds nothing.
		return bad("LeaseDuration", "must be from %s to %s in whole milliseconds, got %s", minLeaseDuration, maxLeaseDuration, c.LeaseDuration)
	}
	if c.RenewDeadline >= c.LeaseDuration {
		return bad("RenewDeadline", "must be below LeaseDuration (%s), got %s", c.LeaseDuration, c.RenewDeadline)
	}
	if jittered := time.Duration(JitterFactor * float64(c.RetryPeriod)); c.RenewDeadline <= jittered {
		return bad("RetryPeriod", "%g × RetryPeriod (%s) must be below RenewDeadline (%s), got RetryPeriod %s",
			JitterFactor, jittered, c.RenewDeadline, c.RetryPeriod)
	}
	if c.RenewInterval >= c.RenewDeadline {
		return bad("RenewInterval", "must be below RenewDeadline (%s), got %s", c.RenewDeadline, c.RenewInterval)
	}
	return nil
}
