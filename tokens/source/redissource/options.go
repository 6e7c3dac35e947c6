package redissource

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// DefaultKey is the key template used when Options leaves Key empty.
const DefaultKey = "fencegw:{resource}"

// ResourcePlaceholder is replaced, in a key template, by the resource whose
// leader is read.
const ResourcePlaceholder = "{resource}"

// Options configures Open.
type Options struct {
	// Address names the Redis primary: "host:port", or a redis:// or
	// rediss:// (TLS, verified against the system's roots) URL that may
	// carry a username and password, a database number as its path
	// (redis://:secret@db:6379/2) and go-redis's connection parameters in
	// its query. See ParseAddress.
	Address string
	// Key is the lock key's template: every ResourcePlaceholder in it is
	// replaced by the resource; DefaultKey if empty. A template without
	// the placeholder names one lock for every resource.
	Key string
}

// WithDefaults returns o with an empty Key set to DefaultKey.
func (o Options) WithDefaults() Options {
	if o.Key == "" {
		o.Key = DefaultKey
	}
	return o
}

// KeyFor returns the lock key of resource: o.Key (after WithDefaults)
// with every ResourcePlaceholder replaced by resource.
func (o Options) KeyFor(resource string) string {
	return strings.ReplaceAll(o.WithDefaults().Key, ResourcePlaceholder, resource)
}

// CounterSuffix ends the recipe's epoch counter key: a lock key K draws
// its epochs from INCR K+CounterSuffix.
const CounterSuffix = ":epoch"

// ErrKeyCollision is wrapped by the errors of Open, for a key template
// that ends in CounterSuffix, and of Current, for a resource whose lock key
// would end in it: such a lock key may be another lock's epoch counter
// (with the template "fencegw:{resource}", the resource "acme:epoch" reads
// the counter of the resource "acme"), and a counter's value is no leader.
var ErrKeyCollision = errors.New("lock key ends in " + CounterSuffix + ", the suffix of the epoch counter keys")

// lockKey returns KeyFor(resource), or an error wrapping ErrKeyCollision
// when that key ends in CounterSuffix. Every counter key ends in it, so a
// lock key that does not can never be one.
func (o Options) lockKey(resource string) (string, error) {
	key := o.KeyFor(resource)
	if strings.HasSuffix(key, CounterSuffix) {
		return "", fmt.Errorf("resource %q gives the lock key %q: %w", resource, key, ErrKeyCollision)
	}
	return key, nil
}

// checkKey fails, wrapping ErrKeyCollision, when the key template (after
// WithDefaults) ends in CounterSuffix: every lock key it makes would.
func (o Options) checkKey() error {
	if k := o.WithDefaults().Key; strings.HasSuffix(k, CounterSuffix) {
		return fmt.Errorf("key %q: %w", k, ErrKeyCollision)
	}
	return nil
}

// ParseAddress parses an Options.Address into go-redis client options.
//
// A plain "host:port" needs a host and a port from 1 to 65535. A URL must
// be redis:// or rediss:// with a host; a port, if given, from 1 to 65535
// (6379 if not); a database number as its only path segment; and only
// query parameters go-redis knows. Other schemes (unix://, http://) are
// refused. Error messages never repeat a URL, which may hold a password.
func ParseAddress(address string) (*redis.Options, error) {
	if strings.TrimSpace(address) == "" {
		return nil, errors.New("address is empty")
	}
	if !strings.Contains(address, "://") {
		if err := checkHostPort(address); err != nil {
			return nil, err
		}
		return &redis.Options{Addr: address}, nil
	}
	u, err := url.Parse(address)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL itself
		}
		return nil, fmt.Errorf("address is not a valid URL: %w", err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("address: scheme %q: want redis:// or rediss:// (or host:port)", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, errors.New("address: the URL has no host")
	}
	if p := u.Port(); p != "" {
		if err := checkPort(p); err != nil {
			return nil, err
		}
	}
	if u.Opaque != "" {
		return nil, errors.New("address: the URL has no // before its host")
	}
	ro, err := redis.ParseURL(address)
	if err != nil {
		return nil, fmt.Errorf("address: %w", err)
	}
	return ro, nil
}

// checkHostPort checks a plain "host:port" address. Its errors repeat the
// address unless it holds an "@", which may follow a password.
func checkHostPort(a string) error {
	what := fmt.Sprintf("address %q", a)
	if strings.Contains(a, "@") {
		what = "address (not repeated: it holds an @)"
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("%s: want host:port or a redis:// or rediss:// URL", what)
	}
	if host == "" {
		return fmt.Errorf("%s: no host", what)
	}
	if strings.ContainsAny(host, "/@?# \t") {
		return fmt.Errorf("%s: not a host name", what)
	}
	return checkPort(port)
}

// checkPort checks a decimal TCP port from 1 to 65535.
func checkPort(p string) error {
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 || p[0] == '+' {
		return fmt.Errorf("address: port %q: want 1 to 65535", p)
	}
	return nil
}

// ErrNotEpoch is wrapped by the error Current returns when the lock key
// holds a value that is not an epoch.
var ErrNotEpoch = errors.New("not an epoch")

// maxEpochDigits is the length of the largest int64, 9223372036854775807.
const maxEpochDigits = 19

// parseEpoch parses a lock key's value: an epoch as INCR returns it and
// SET stores it, a positive decimal integer that fits in an int64, without
// sign, leading zeros, spaces or anything else. Any other value fails,
// wrapping ErrNotEpoch: the lock is not one this package can read, and
// the caller must fail closed.
func parseEpoch(v string) (int64, error) {
	switch {
	case v == "":
		return 0, fmt.Errorf("empty value: %w", ErrNotEpoch)
	case len(v) > maxEpochDigits:
		return 0, fmt.Errorf("%d bytes, more than an int64's %d digits: %w", len(v), maxEpochDigits, ErrNotEpoch)
	case v[0] == '0':
		return 0, fmt.Errorf("%q: zero or a leading zero, never an epoch INCR hands out: %w", v, ErrNotEpoch)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, fmt.Errorf("%q: not a decimal integer: %w", v, ErrNotEpoch)
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: beyond an int64: %w", v, ErrNotEpoch)
	}
	return n, nil
}
