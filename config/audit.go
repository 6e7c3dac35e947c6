package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"
)

// validateAudit reports every invalid audit setting through bad.
func validateAudit(a Audit, bad func(field, format string, args ...any)) {
	if len(a.Replica) > 128 || strings.IndexFunc(a.Replica, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		bad("audit.replica", "must be at most 128 printable characters, got %q", a.Replica)
	}
	interval := a.Interval.D()
	if interval < time.Second || interval > time.Hour {
		bad("audit.interval", "must be from 1s to 1h, got %s", interval)
	}
	if d := a.Flush.D(); d < 10*time.Millisecond || d > time.Minute {
		bad("audit.flush", "must be from 10ms to 1m, got %s", d)
	}
	if d := a.Retention.D(); d < time.Minute || d > 10*365*24*time.Hour {
		bad("audit.retention", "must be from 1m to 87600h, got %s", d)
	}
	validateAuditClass("audit.history", a.History, bad)
	validateAuditClass("audit.junk", a.Junk, bad)
	if a.MaxPending != 0 {
		bad("audit.max_pending", "is replaced by audit.history.max_pending and audit.junk.max_pending")
	}
	if a.MaxEntries != 0 {
		bad("audit.max_entries", "is replaced by audit.history.max_entries and audit.junk.max_entries")
	}
}

// validateAuditClass reports every invalid setting of the audit class
// under key through bad.
func validateAuditClass(key string, c AuditClass, bad func(field, format string, args ...any)) {
	if n := c.MaxPending; n < 100 || n > 1_000_000 {
		bad(key+".max_pending", "must be from 100 to 1000000, got %d", n)
	}
	if n := c.MaxEntries; n < 100 || n > 100_000_000 {
		bad(key+".max_entries", "must be from 100 to 100000000, got %d", n)
	}
}

// CheckTraceURL checks a trace viewer URL template: empty, or an absolute
// http(s) URL with {trace_id} in it.
func CheckTraceURL(s string) error {
	if s == "" {
		return nil
	}
	if !strings.Contains(s, "{trace_id}") {
		return fmt.Errorf("must contain {trace_id}, got %q", s)
	}
	u, err := url.Parse(strings.ReplaceAll(s, "{trace_id}", "0"))
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http or https URL, got " + fmt.Sprintf("%q", s))
	}
	return nil
}
