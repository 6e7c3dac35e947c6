package zksource

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// ResourcePlaceholder in Options.Path stands for the resource name.
const ResourcePlaceholder = "{resource}"

// DefaultSessionTimeout is the SessionTimeout used when Options leaves it
// zero.
const DefaultSessionTimeout = 10 * time.Second

// Options configures Open.
type Options struct {
	// Servers are the ensemble's client addresses, each host:port. At
	// least one is required.
	Servers []string
	// Path is the election's parent znode: absolute, without a trailing
	// slash. Every occurrence of ResourcePlaceholder is replaced by the
	// resource name Current is asked about, so one Source reads one
	// election per resource; a Path without it names the one election
	// that answers for every resource.
	Path string
	// SessionTimeout is the session timeout the client asks for (the
	// server bounds it by its minSessionTimeout and maxSessionTimeout);
	// DefaultSessionTimeout if zero, never negative. It also bounds how
	// long a request waits on a connection that went silent.
	SessionTimeout time.Duration
}

// WithDefaults returns o with a zero SessionTimeout set to its default.
func (o Options) WithDefaults() Options {
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	return o
}

// Validate checks o after WithDefaults: at least one server, each
// host:port; a Path that CheckPath accepts; a positive SessionTimeout.
// The error names the offending field. Validate does not connect.
func (o Options) Validate() error {
	if len(o.Servers) == 0 {
		return errors.New("zksource: Servers is empty")
	}
	for i, s := range o.Servers {
		if host, port, err := net.SplitHostPort(s); err != nil || host == "" || port == "" {
			return fmt.Errorf("zksource: Servers[%d] %q: want host:port", i, s)
		}
	}
	if err := CheckPath(o.Path); err != nil {
		return fmt.Errorf("zksource: Path: %w", err)
	}
	if o.SessionTimeout <= 0 {
		return fmt.Errorf("zksource: SessionTimeout %v: must be positive", o.SessionTimeout)
	}
	return nil
}

// ErrInvalidPath is wrapped by the errors about a path ZooKeeper would
// refuse.
var ErrInvalidPath = errors.New("invalid znode path")

// CheckPath reports whether p can be an election's path, with "x" for each
// ResourcePlaceholder: absolute, naming a znode below the root, without a
// trailing slash, empty, "." or ".." segments, and without control
// characters, NUL or other braces (ResourcePlaceholder is the only
// placeholder). Its error wraps ErrInvalidPath.
func CheckPath(p string) error {
	if strings.TrimSpace(p) == "" {
		return fmt.Errorf("%w: empty", ErrInvalidPath)
	}
	sample := strings.ReplaceAll(p, ResourcePlaceholder, "x")
	if strings.ContainsAny(sample, "{}") {
		return fmt.Errorf("%w: %q: %s is the only placeholder", ErrInvalidPath, p, ResourcePlaceholder)
	}
	return checkZnode(sample)
}

// checkZnode reports whether p is a znode path ZooKeeper accepts, other
// than the root. Its error wraps ErrInvalidPath.
func checkZnode(p string) error {
	if p == "" || p[0] != '/' {
		return fmt.Errorf("%w: %q is not absolute", ErrInvalidPath, p)
	}
	if p == "/" {
		return fmt.Errorf("%w: the root cannot be an election", ErrInvalidPath)
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: %q has an empty, . or .. segment", ErrInvalidPath, p)
		}
	}
	for _, r := range p {
		// ZooKeeper's PathUtils refuses these code points.
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) {
			return fmt.Errorf("%w: %q contains the character %U", ErrInvalidPath, p, r)
		}
	}
	return nil
}
