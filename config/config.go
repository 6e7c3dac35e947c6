// Package config reads fencegw's YAML configuration: Default, then Parse
// (unknown keys are errors), then Validate, whose every error names the
// field it is about.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/fencegw/fencegw/tokens"
	"go.yaml.in/yaml/v3"
)

// Config is the whole configuration of `fencegw serve`.
type Config struct {
	// Listen is the proxy's address.
	Listen string `yaml:"listen"`
	// APIListen is the control API's address; it must differ from Listen.
	APIListen string `yaml:"api_listen"`
	// Store is where high-water marks live: a file path (embedded),
	// postgres://… or etcd://host:port[,host:port…].
	Store string `yaml:"store"`
	// NewStore acknowledges, for one start, that the embedded store file is
	// missing because the store was lost: without it a missing file beside
	// a kept signing key is refused; with it a new file is created and the
	// kept key rotated. Set by serve --new-store only, never by a file: a
	// standing acknowledgment would hide the next loss.
	NewStore bool `yaml:"-"`
	// StoreTimeout bounds every store call made for a request.
	StoreTimeout Duration `yaml:"store_timeout"`
	// ShutdownTimeout bounds the drain of in-flight requests on SIGTERM.
	ShutdownTimeout Duration `yaml:"shutdown_timeout"`
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	// IdleTimeout closes idle client keep-alive connections.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// BodyTimeout and MinBodyRate bound reading a request's body, on both
	// listeners, whether or not a handler reads it: the body must have
	// arrived BodyTimeout after the head, plus one second per MinBodyRate
	// bytes of it (declared, or received so far when chunked). A body that
	// has not is cut: the answer says Connection: close and the connection
	// closes.
	BodyTimeout Duration `yaml:"body_timeout"`
	// MinBodyRate is in bytes per second; 0 gives every body BodyTimeout.
	MinBodyRate int64 `yaml:"min_body_rate"`
	// WriteTimeout bounds each write of an answer to a client: a client
	// that accepts nothing of it for this long is cut off. Streamed
	// answers and watch streams may last longer, as long as they flow.
	WriteTimeout Duration `yaml:"write_timeout"`
	// MaxConnections caps the connections open on each listener; one
	// beyond it is closed at once, unanswered, and counted.
	MaxConnections int `yaml:"max_connections"`
	// UpstreamDialTimeout bounds connecting to an upstream.
	UpstreamDialTimeout Duration `yaml:"upstream_dial_timeout"`
	// UpstreamResponseHeaderTimeout bounds the wait for an upstream's answer.
	UpstreamResponseHeaderTimeout Duration `yaml:"upstream_response_header_timeout"`
	// UpstreamTimeout bounds an admitted write's whole exchange, from
	// admission until the upstream's answer begins, the client's body
	// included: the window in which a write admitted at one epoch may still
	// reach the upstream after a higher epoch was admitted.
	UpstreamTimeout Duration `yaml:"upstream_timeout"`
	// LockDelay is the lock-delay of grants whose acquire names none: after
	// such a grant lapses (expires rather than being released), the lease
	// is granted to nobody for this long. 0 (the default) turns it off.
	LockDelay Duration `yaml:"lock_delay"`
	// MaxBodyBytes caps request bodies (0: no cap).
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxHeaderBytes caps request headers.
	MaxHeaderBytes int `yaml:"max_header_bytes"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level"`
	// LogFormat is json or text.
	LogFormat string `yaml:"log_format"`
	// LogRefusalsPerSecond caps the refused or failed requests (proxy and
	// control API together) logged in full each second; the others are
	// counted into one line per route, decision and status each second.
	LogRefusalsPerSecond int `yaml:"log_refusals_per_second"`
	// TLS serves the proxy over TLS.
	TLS *ListenerTLS `yaml:"tls"`
	// APITLS serves the control API over TLS, optionally with client
	// certificates.
	APITLS *ListenerTLS `yaml:"api_tls"`
	// Signing configures the token authority's signed tokens.
	Signing Signing `yaml:"signing"`
	// InsecureKeyFilePermissions starts the gateway, with a warning, when a
	// private key file (signing.key_file, tls.key_file, api_tls.key_file)
	// may be read by other users: world-readable, or group-readable by a
	// group the process is not in. By default that refuses to start.
	InsecureKeyFilePermissions bool `yaml:"insecure_key_file_permissions"`
	// APIKeys authenticate control API callers. Without any, the control
	// API serves on loopback addresses only.
	APIKeys []APIKey `yaml:"api_keys"`
	// Idempotency tunes at-most-once writes (Idempotency-Key).
	Idempotency Idempotency `yaml:"idempotency"`
	// Telemetry tunes what fencegw reports. Exporters are configured by the
	// standard OTEL_* environment variables, not here.
	Telemetry Telemetry `yaml:"telemetry"`
	// Audit tunes the durable audit of refusals and lease history.
	Audit Audit `yaml:"audit"`
	// UI tunes the timeline page at /ui/ on the control API.
	UI UI `yaml:"ui"`
	// Watch tunes the lease watch streams.
	Watch Watch `yaml:"watch"`
	// Control tunes the control API's defences against web pages.
	Control Control `yaml:"control"`
	// Leases caps the live leases and reclaims the records of ended ones.
	Leases Leases `yaml:"leases"`
	// Routes are the proxied paths.
	Routes []Route `yaml:"routes"`
}

// Telemetry tunes metrics labels and profiles.
type Telemetry struct {
	// ResourceLabels adds resource names to lease metrics (unbounded
	// cardinality: only for a known, small set of resources).
	ResourceLabels bool `yaml:"resource_labels"`
	// Pprof serves Go's profiles under /debug/pprof/ on the control API
	// (an admin key when api_keys are set; loopback only otherwise).
	Pprof bool `yaml:"pprof"`
	// MetricsPublic serves /metrics without a key when api_keys are set
	// (a scraper on a private network); by default it needs one (any).
	MetricsPublic bool `yaml:"metrics_public"`
}

// Audit tunes the durable audit: refused writes and lease history, kept
// in the store and shared by every replica.
type Audit struct {
	// Replica names this gateway in the entries it records (default: the
	// host name).
	Replica string `yaml:"replica"`
	// Interval is how long identical events are counted as one entry.
	Interval Duration `yaml:"interval"`
	// Flush is how often changed entries are written to the store.
	Flush Duration `yaml:"flush"`
	// Retention is how long entries are kept.
	Retention Duration `yaml:"retention"`
	// History bounds lease history and the refusals of writes that
	// presented a token (the refusals and leases logs, each).
	History AuditClass `yaml:"history"`
	// Junk bounds the refusals of writes that presented no token or one
	// that does not parse, counted per route and reason (the junk log):
	// however many there are, they never take history's room.
	Junk AuditClass `yaml:"junk"`
	// MaxPending and MaxEntries are the keys from before the classes:
	// Validate refuses them, naming audit.history.* and audit.junk.*.
	MaxPending int `yaml:"max_pending"`
	MaxEntries int `yaml:"max_entries"`
}

// AuditClass bounds one class of audit entries.
type AuditClass struct {
	// MaxPending bounds the class's entries held in memory while they wait
	// to be written; events beyond it are dropped and counted.
	MaxPending int `yaml:"max_pending"`
	// MaxEntries bounds the class's entries kept per log in the store; the
	// oldest go first.
	MaxEntries int `yaml:"max_entries"`
}

// UI tunes the timeline page.
type UI struct {
	// TraceURL links trace ids to a trace viewer: an http(s) URL with
	// {trace_id} in it (none when empty).
	TraceURL string `yaml:"trace_url"`
}

// Signing configures signed tokens.
type Signing struct {
	// Issuer is the tokens' iss claim, checked on verification.
	Issuer string `yaml:"issuer"`
	// Audience is the tokens' aud claim, checked on verification.
	Audience string `yaml:"audience"`
	// TokenLifetime bounds a token's validity (exp), independent of the
	// lease TTL: the epoch fences, exp only bounds a leaked token.
	TokenLifetime Duration `yaml:"token_lifetime"`
	// Algorithm of a generated key: EdDSA, ES256 or HS256.
	Algorithm string `yaml:"algorithm"`
	// KeyFile is the PEM signing key. Empty: a key is generated once and
	// kept beside the embedded store's file, or in a shared store.
	KeyFile string `yaml:"key_file"`
	// VerifyKeyFiles are further PEM keys that verify tokens (rotation).
	VerifyKeyFiles []string `yaml:"verify_key_files"`
}

// APIKey is one caller of the control API.
type APIKey struct {
	// Name identifies the caller in logs and owns the leases the key
	// acquires (recorded in the store; renaming a key orphans its live
	// grants until they lapse). At most 256 bytes, no control characters.
	Name string `yaml:"name"`
	// SHA256 is the hex SHA-256 of the key (fencegw keys api-key prints it).
	SHA256 string `yaml:"sha256"`
	// Leases are the lease-name patterns (path.Match) the key may use.
	Leases []string `yaml:"leases"`
	// Admin keys may use every lease and the fence endpoints.
	Admin bool `yaml:"admin"`
	// MaxLeases caps the live leases this key owns (see Leases.MaxLive);
	// 0, the default, leaves it to the global cap alone.
	MaxLeases int `yaml:"max_leases"`
}

// Route is one proxied path prefix.
type Route struct {
	// Name identifies the route in logs; the prefix when empty.
	Name string `yaml:"name"`
	// Host restricts the route to one request host.
	Host string `yaml:"host"`
	// Prefix is the path prefix, starting with "/".
	Prefix string `yaml:"prefix"`
	// Upstream is an absolute http(s) URL.
	Upstream string `yaml:"upstream"`
	// StripPrefix removes Prefix from the path sent upstream.
	StripPrefix bool `yaml:"strip_prefix"`
	// Tokens is the accepted token kind: signed (default), raw or any.
	Tokens string `yaml:"tokens"`
	// EpochSource is an external election a raw epoch must agree with.
	EpochSource *EpochSource `yaml:"epoch_source"`
	// TLS tunes TLS toward an https upstream.
	TLS *UpstreamTLS `yaml:"tls"`
	// Resource names the fenced resource: literal text with {segment:N}
	// and {header:Name} placeholders. Empty: the Fencing-Resource header.
	Resource string `yaml:"resource"`
	// Methods are the fenced methods; POST, PUT, PATCH, DELETE when empty.
	Methods []string `yaml:"methods"`
	// Idempotency is off, optional (the default) or required: what the
	// route does with an Idempotency-Key header on a fenced write.
	Idempotency string `yaml:"idempotency"`
	// RawOnLeased is refuse (the default) or allow: whether a raw epoch on
	// this route may write to a resource this gateway leases. allow trusts
	// every client of the route to act as the lease's holder.
	RawOnLeased string `yaml:"raw_on_leased"`
}

// The route raw_on_leased modes (routes[].raw_on_leased).
const (
	RawOnLeasedRefuse = "refuse"
	RawOnLeasedAllow  = "allow"
)

// The route idempotency modes (routes[].idempotency).
const (
	IdempotencyOff      = "off"
	IdempotencyOptional = "optional"
	IdempotencyRequired = "required"
)

// Idempotency tunes at-most-once writes (the Idempotency-Key header).
type Idempotency struct {
	// TTL is how long a key's record is kept (and the write not forwarded
	// again), from its first use.
	TTL Duration `yaml:"ttl"`
	// MaxAnswerBytes bounds the upstream answer body kept for replays; a
	// longer answer is recorded without it and cannot be replayed.
	MaxAnswerBytes int `yaml:"max_answer_bytes"`
}

// The route token modes (routes[].tokens).
const (
	TokensSigned = "signed"
	TokensRaw    = "raw"
	TokensAny    = "any"
)

// Default returns the configuration used where the file says nothing.
func Default() Config {
	return Config{
		Listen:                        "127.0.0.1:8080",
		APIListen:                     "127.0.0.1:8081",
		Store:                         "fencegw.db",
		StoreTimeout:                  Duration(tokens.DefaultStoreTimeout),
		ShutdownTimeout:               Duration(30 * time.Second),
		ReadHeaderTimeout:             Duration(10 * time.Second),
		IdleTimeout:                   Duration(120 * time.Second),
		BodyTimeout:                   Duration(30 * time.Second),
		MinBodyRate:                   64 << 10,
		WriteTimeout:                  Duration(30 * time.Second),
		MaxConnections:                10000,
		UpstreamDialTimeout:           Duration(5 * time.Second),
		UpstreamResponseHeaderTimeout: Duration(30 * time.Second),
		UpstreamTimeout:               Duration(30 * time.Second),
		MaxBodyBytes:                  10 << 20,
		MaxHeaderBytes:                64 << 10,
		LogLevel:                      "info",
		LogFormat:                     "json",
		LogRefusalsPerSecond:          20,
		Audit: Audit{Interval: Duration(10 * time.Second), Flush: Duration(time.Second),
			Retention: Duration(30 * 24 * time.Hour), History: AuditClass{MaxPending: 10000, MaxEntries: 100_000},
			Junk: AuditClass{MaxPending: 1000, MaxEntries: 10_000}},
		Idempotency: Idempotency{TTL: Duration(24 * time.Hour), MaxAnswerBytes: 64 << 10},
		Watch:       Watch{WriteTimeout: Duration(DefaultWatchWriteTimeout), MaxWatchers: DefaultMaxWatchers},
		Leases:      Leases{MaxLive: DefaultMaxLiveLeases, Retention: Duration(DefaultLeaseRetention)},
		Signing: Signing{
			Issuer:        "fencegw",
			Audience:      "fencegw",
			TokenLifetime: Duration(10 * time.Minute),
			Algorithm:     "EdDSA",
		},
	}
}

// Parse reads YAML over Default, expanding ${NAME} from the process
// environment (see ParseEnv). Parse does not validate; call Validate.
func Parse(data []byte) (Config, error) { return ParseEnv(data, os.LookupEnv) }

// ParseEnv reads YAML over Default. In every value, ${NAME} is replaced by
// lookup(NAME), ${NAME:-default} falls back to default, and $$ is a literal
// $. Unknown keys, wrong types, unset variables and trailing documents are
// errors. ParseEnv does not validate; call Validate.
func ParseEnv(data []byte, lookup func(string) (string, bool)) (Config, error) {
	c := Default()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, errEOF) {
			return c, nil // an empty file: all defaults
		}
		return Config{}, fmt.Errorf("parse config: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return Config{}, errors.New("parse config: more than one YAML document")
	}
	if err := expandNode(&doc, lookup); err != nil {
		return Config{}, fmt.Errorf("parse config: %w", err)
	}
	// Re-encode the expanded tree so the strict decoder (unknown keys are
	// errors) reads it; line numbers stay those of the expanded document.
	expanded, err := yaml.Marshal(&doc)
	if err != nil {
		return Config{}, fmt.Errorf("parse config: %w", err)
	}
	strict := yaml.NewDecoder(bytes.NewReader(expanded))
	strict.KnownFields(true)
	if err := strict.Decode(&c); err != nil && !errors.Is(err, errEOF) {
		return Config{}, fmt.Errorf("parse config: %w", err)
	}
	return c, nil
}

// Load reads, parses and validates the file at path.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
