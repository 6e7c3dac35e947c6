package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegw/fencegw/tokens"
)

// FieldError is a validation error about one field, named by its path in
// the file ("routes[1].upstream").
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate checks every field and returns all problems joined, each a
// *FieldError.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	validateListeners(c, bad)
	validateTimeouts(c, bad)
	validateAudit(c.Audit, bad)
	validateControl(c.Control, bad)
	validateConnBudget(c, bad)
	validateWatch(c.Watch, bad)
	validateLeases(c, bad)
	if err := CheckTraceURL(c.UI.TraceURL); err != nil {
		bad("ui.trace_url", "%v", err)
	}
	if c.MaxBodyBytes < 0 {
		bad("max_body_bytes", "must not be negative")
	}
	if c.MaxHeaderBytes < 1024 {
		bad("max_header_bytes", "must be at least 1024, got %d", c.MaxHeaderBytes)
	}
	validateLogging(c, bad)
	errs = append(errs, c.Signing.validate()...)
	errs = append(errs, validateAPIKeys(c.APIKeys)...)
	if c.TLS != nil {
		errs = append(errs, c.TLS.validate("tls", false)...)
	}
	if c.APITLS != nil {
		errs = append(errs, c.APITLS.validate("api_tls", true)...)
	}
	if !c.ControlAuthenticated() && c.APIListen != "" && !IsLoopback(c.APIListen) {
		bad("api_listen", "%s is not a loopback address: without api_keys (or api_tls.client_ca_file) the control API serves on loopback only", c.APIListen)
	}
	for i, r := range c.Routes {
		errs = append(errs, r.validate(fmt.Sprintf("routes[%d]", i))...)
	}
	validateRouteSet(c.Routes, bad)
	return errors.Join(errs...)
}

// validateListeners checks listen, api_listen and store.
func validateListeners(c *Config, bad func(field, format string, args ...any)) {
	if err := checkAddr(c.Listen); err != nil {
		bad("listen", "%v", err)
	}
	if err := checkAddr(c.APIListen); err != nil {
		bad("api_listen", "%v", err)
	}
	if c.Listen != "" && c.Listen == c.APIListen {
		bad("api_listen", "must differ from listen (%s)", c.Listen)
	}
	if err := CheckStore(c.Store); err != nil {
		bad("store", "%v", err)
	}
}

// validateTimeouts checks the timeouts, the idempotency window (at least
// upstream_timeout) and lock_delay.
func validateTimeouts(c *Config, bad func(field, format string, args ...any)) {
	for name, d := range map[string]Duration{
		"store_timeout": c.StoreTimeout, "shutdown_timeout": c.ShutdownTimeout,
		"read_header_timeout": c.ReadHeaderTimeout, "idle_timeout": c.IdleTimeout,
		"upstream_dial_timeout": c.UpstreamDialTimeout, "upstream_response_header_timeout": c.UpstreamResponseHeaderTimeout,
		"upstream_timeout": c.UpstreamTimeout,
	} {
		if d <= 0 {
			bad(name, "must be a positive duration, got %s", d.D())
		}
	}
	if d := c.Idempotency.TTL.D(); d < time.Minute || d > 30*24*time.Hour {
		bad("idempotency.ttl", "must be from 1m to 720h, got %s", d)
	}
	if ttl, ut := c.Idempotency.TTL.D(), c.UpstreamTimeout.D(); ttl < ut {
		bad("idempotency.ttl", "must be at least upstream_timeout (%s), got %s: a key's record must outlast the write it guards", ut, ttl)
	}
	if n := c.Idempotency.MaxAnswerBytes; n < 0 || n > 1<<20 {
		bad("idempotency.max_answer_bytes", "must be from 0 to 1048576, got %d", n)
	}
	if d := c.LockDelay.D(); d < 0 || d > tokens.MaxLockDelay || d%tokens.LeaseResolution != 0 {
		// Every store keeps lock-delays in whole milliseconds: refused, not rounded.
		bad("lock_delay", "must be from 0s to %s in whole milliseconds, got %s", tokens.MaxLockDelay, d)
	}
}

// validateLogging checks log_level, log_format and log_refusals_per_second.
func validateLogging(c *Config, bad func(field, format string, args ...any)) {
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("log_level", "must be debug, info, warn or error, got %q", c.LogLevel)
	}
	switch c.LogFormat {
	case "json", "text":
	default:
		bad("log_format", "must be json or text, got %q", c.LogFormat)
	}
	if c.LogRefusalsPerSecond < 1 || c.LogRefusalsPerSecond > 10000 {
		bad("log_refusals_per_second", "must be from 1 to 10000, got %d", c.LogRefusalsPerSecond)
	}
}

// validateRouteSet checks that there is a route and that no two serve the
// same host and prefix; validate checks each route.
func validateRouteSet(routes []Route, bad func(field, format string, args ...any)) {
	if len(routes) == 0 {
		bad("routes", "at least one route is required")
	}
	seen := map[string]int{}
	for i, r := range routes {
		key := strings.ToLower(r.Host) + " " + r.Prefix
		if j, dup := seen[key]; dup {
			bad(fmt.Sprintf("routes[%d].prefix", i), "routes[%d] already serves host %q and prefix %q", j, r.Host, r.Prefix)
		}
		seen[key] = i
	}
}

func (r *Route) validate(at string) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: at + "." + field, Msg: fmt.Sprintf(format, args...)})
	}
	if r.Prefix == "" || r.Prefix[0] != '/' {
		bad("prefix", "must start with /, got %q", r.Prefix)
	} else if !cleanPrefix(r.Prefix) {
		bad("prefix", "%q has empty, . or .. segments, or ';', '\\' or control characters", r.Prefix)
	}
	if _, err := ParseUpstream(r.Upstream); err != nil {
		bad("upstream", "%v", err)
	}
	switch r.Tokens {
	case "", TokensSigned, TokensAny:
		if r.EpochSource != nil {
			bad("epoch_source", "needs tokens: raw")
		}
	case TokensRaw:
		if r.EpochSource != nil {
			errs = append(errs, r.EpochSource.validate(at+".epoch_source")...)
			errs = append(errs, sourceResource(at, r.Resource, r.EpochSource)...)
		}
	default:
		bad("tokens", "must be signed, raw or any, got %q", r.Tokens)
	}
	if r.Resource != "" {
		if _, err := tokens.ParseTemplate(r.Resource); err != nil {
			bad("resource", "%v", err)
		}
	}
	if r.TLS != nil {
		if u, err := ParseUpstream(r.Upstream); err == nil && u.Scheme != "https" {
			bad("tls", "needs an https upstream")
		}
		if r.TLS.CAFile != "" {
			if _, err := loadPool(r.TLS.CAFile); err != nil {
				bad("tls.ca_file", "%v", err)
			}
		}
	}
	if strings.ContainsAny(r.Host, "/:@ ") {
		bad("host", "must be a bare host name, got %q", r.Host)
	}
	for j, m := range r.Methods {
		if !isMethod(m) {
			bad(fmt.Sprintf("methods[%d]", j), "%q is not an HTTP method", m)
		}
	}
	switch r.Idempotency {
	case "", IdempotencyOff, IdempotencyOptional, IdempotencyRequired:
	default:
		bad("idempotency", "must be off, optional or required, got %q", r.Idempotency)
	}
	switch r.RawOnLeased {
	case "", RawOnLeasedRefuse:
	case RawOnLeasedAllow:
		if r.Tokens == "" || r.Tokens == TokensSigned {
			bad("raw_on_leased", "allow needs tokens: raw or any (a signed route takes no raw epochs)")
		}
	default:
		bad("raw_on_leased", "must be refuse or allow, got %q", r.RawOnLeased)
	}
	return errs
}

// cleanPrefix reports whether a route prefix is a clean path: no ".",
// ".." or empty segments, no ';', '\\' or control characters (the proxy
// refuses such request paths, so such a prefix would serve nothing).
func cleanPrefix(p string) bool {
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return !strings.Contains(p, "//") && strings.IndexFunc(p, func(r rune) bool {
		return r == ';' || r == '\\' || r < 0x20 || r == 0x7f
	}) < 0
}

// sourceResource checks the resource of a route with an epoch source: the
// client must not choose which election vouches for its write. A header
// placeholder would let it (the upstream need not read that header at
// all); an etcd source, or a redis key, zookeeper path or kubernetes lease
// without {resource}, reads one election for the whole route, so its resource must
// be one fixed name.
func sourceResource(at, resource string, src *EpochSource) []error {
	field := at + ".resource"
	if resource == "" {
		return []error{&FieldError{Field: field, Msg: "required with an epoch_source: the client must not choose which election vouches for it"}}
	}
	t, err := tokens.ParseTemplate(resource)
	if err != nil {
		return nil // reported with the template itself
	}
	if _, static := t.Static(); src.oneElection() && !static {
		what := "an etcd epoch_source"
		switch src.Kind {
		case "redis":
			what = "a redis epoch_source whose key has no {resource}"
		case "zookeeper":
			what = "a zookeeper epoch_source whose path has no {resource}"
		case "kubernetes":
			what = "a kubernetes epoch_source whose lease has no {resource}"
		}
		return []error{&FieldError{Field: field, Msg: "must be a fixed name with " + what + ": one election vouches for the whole route"}}
	}
	if t.HasHeader() {
		return []error{&FieldError{Field: field, Msg: "must not use {header:…} with an epoch_source: the client would choose which election vouches for it"}}
	}
	return nil
}

// ParseUpstream parses an upstream URL: absolute http or https, with a host,
// without query, fragment or user info.
func ParseUpstream(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("not an absolute http(s) URL: %q", s)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("must not carry a query, fragment or user info: %q", s)
	}
	return u, nil
}

// ControlAuthenticated reports whether control API callers are
// authenticated: by API keys or by client certificates.
func (c *Config) ControlAuthenticated() bool {
	return len(c.APIKeys) > 0 || (c.APITLS != nil && c.APITLS.ClientCAFile != "")
}

// IsLoopback reports whether a listen address binds loopback interfaces only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func checkAddr(a string) error {
	if a == "" {
		return errors.New("required (host:port)")
	}
	if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
		return fmt.Errorf("not a host:port address: %q", a)
	}
	return nil
}

func isMethod(m string) bool {
	if m == "" || strings.ToUpper(m) != m {
		return false
	}
	for i := 0; i < len(m); i++ {
		if m[i] < 'A' || m[i] > 'Z' {
			return false
		}
	}
	return true
}

// StoreKind names a store backend.
type StoreKind string

// The store backends.
const (
	StoreEmbedded StoreKind = "embedded"
	StorePostgres StoreKind = "postgres"
	StoreEtcd     StoreKind = "etcd"
)

// KindOf returns the backend a store setting selects.
func KindOf(store string) StoreKind {
	scheme, _, _ := strings.Cut(store, "://")
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		return StorePostgres
	case "etcd", "etcd+http", "etcd+https":
		return StoreEtcd
	default:
		return StoreEmbedded
	}
}

// CheckStore checks the store setting's syntax.
func CheckStore(store string) error {
	if store == "" {
		return errors.New("required: a file path, postgres://… or etcd://host:port")
	}
	switch KindOf(store) {
	case StoreEmbedded:
		if strings.Contains(store, "://") {
			return fmt.Errorf("unknown store URL scheme in %q: want a file path, postgres:// or etcd://", redact(store))
		}
		if strings.Contains(store, "=") {
			// A keyword/value DSN would otherwise become a file name, and
			// replicas meant to share a database would each fence alone.
			return errors.New("looks like a keyword/value DSN: write PostgreSQL stores as postgres:// URLs")
		}
	case StorePostgres:
		if _, err := pgxpool.ParseConfig(store); err != nil {
			return fmt.Errorf("not a valid postgres URL: %q", redact(store))
		}
	case StoreEtcd:
		if _, err := ParseEtcdURL(store); err != nil {
			return err
		}
	}
	return nil
}

// redact hides a password in a URL for messages.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
