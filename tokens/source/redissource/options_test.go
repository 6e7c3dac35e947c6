package redissource

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
)

func TestParseEpoch(t *testing.T) {
	for v, want := range map[string]int64{"1": 1, "42": 42, "9223372036854775807": 9223372036854775807} {
		if got, err := parseEpoch(v); err != nil || got != want {
			t.Errorf("parseEpoch(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"", "0", "00", "01", "-1", "+1", " 1", "1 ", "1\r\n", "0x1", "1_000", "١", "9223372036854775808", "99999999999999999999"} {
		if got, err := parseEpoch(v); !errors.Is(err, ErrNotEpoch) {
			t.Errorf("parseEpoch(%q) = %d, %v; want ErrNotEpoch", v, got, err)
		}
	}
}

// FuzzEpochValue: a lock value either fails, wrapping ErrNotEpoch, or is
// the canonical decimal form of a positive int64 (what INCR returns).
func FuzzEpochValue(f *testing.F) {
	for _, v := range []string{"1", "42", "0", "007", "-5", "9223372036854775807", "9223372036854775808", "node-a", " 1", ""} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		n, err := parseEpoch(v)
		if err != nil {
			if !errors.Is(err, ErrNotEpoch) {
				t.Fatalf("parseEpoch(%q) = %v, not ErrNotEpoch", v, err)
			}
			if len(err.Error()) > 200 {
				t.Fatalf("parseEpoch(%q): a %d-byte error", v, len(err.Error()))
			}
			if canonical, perr := strconv.ParseInt(v, 10, 64); perr == nil && canonical > 0 && strconv.FormatInt(canonical, 10) == v {
				t.Fatalf("parseEpoch(%q) refused INCR's own output: %v", v, err)
			}
			return
		}
		if n <= 0 || strconv.FormatInt(n, 10) != v {
			t.Fatalf("parseEpoch(%q) = %d", v, n)
		}
	})
}

func TestParseAddress(t *testing.T) {
	for _, tc := range []struct {
		address, addr string
		db            int
		tls           bool
		user, pw      string
	}{
		{"db:6379", "db:6379", 0, false, "", ""},
		{"10.0.0.7:7000", "10.0.0.7:7000", 0, false, "", ""},
		{"[::1]:6380", "[::1]:6380", 0, false, "", ""},
		{"redis://db", "db:6379", 0, false, "", ""},
		{"redis://:pw@db:6380/3", "db:6380", 3, false, "", "pw"},
		{"rediss://app:p%40ss@cache.internal:6390/1?dial_timeout=3s", "cache.internal:6390", 1, true, "app", "p@ss"},
		{"redis://[::1]:6379/0", "[::1]:6379", 0, false, "", ""},
	} {
		o, err := ParseAddress(tc.address)
		if err != nil {
			t.Errorf("ParseAddress(%q): %v", tc.address, err)
			continue
		}
		if o.Addr != tc.addr || o.DB != tc.db || (o.TLSConfig != nil) != tc.tls || o.Username != tc.user || o.Password != tc.pw {
			t.Errorf("ParseAddress(%q) = addr %q db %d tls %v user %q pw %q", tc.address, o.Addr, o.DB, o.TLSConfig != nil, o.Username, o.Password)
		}
		if tc.tls && o.TLSConfig.ServerName != "cache.internal" {
			t.Errorf("ParseAddress(%q): TLS server name %q", tc.address, o.TLSConfig.ServerName)
		}
	}
	for _, a := range []string{"", " ", "db", "db:", ":6379", "db:0", "db:65536", "db:-1", "db:+1", "db:x",
		"a/b:1", "user@db:1", "redis://", "redis:///1", "redis://db:0", "redis://db:99999", "redis:db:1",
		"redis://db/1/2", "redis://db/x", "redis://db?bogus=1", "unix:///tmp/r.sock", "https://db:1"} {
		if o, err := ParseAddress(a); err == nil {
			t.Errorf("ParseAddress(%q) = %q, want an error", a, o.Addr)
		}
	}
	for _, a := range []string{"app:hunter22@db:6379", "hunter22@db", ":hunter22@db:1", "redis://:hunter22@db:0", "redis://:hunter22@[::1/0"} {
		if _, err := ParseAddress(a); err == nil || strings.Contains(err.Error(), "hunter22") {
			t.Errorf("ParseAddress(%q) = %v, want an error without the password", a, err)
		}
	}
}

// FuzzAddress: ParseAddress never panics, and what it accepts names a host
// and a port from 1 to 65535 that the client can dial.
func FuzzAddress(f *testing.F) {
	for _, a := range []string{"db:6379", "[::1]:1", "redis://:pw@db:6380/3", "rediss://u:p@h/1?dial_timeout=1s",
		"redis://", "db", "unix:///x", "redis://[::1/0", "redis://h:0", "redis://h/1/2"} {
		f.Add(a)
	}
	f.Fuzz(func(t *testing.T, a string) {
		o, err := ParseAddress(a)
		if err != nil {
			if o != nil {
				t.Fatalf("ParseAddress(%q) returned options and %v", a, err)
			}
			return
		}
		host, port, err := net.SplitHostPort(o.Addr)
		if err != nil || host == "" {
			t.Fatalf("ParseAddress(%q).Addr = %q: %v", a, o.Addr, err)
		}
		if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
			t.Fatalf("ParseAddress(%q).Addr = %q: port out of range", a, o.Addr)
		}
		if o.Network != "" && o.Network != "tcp" {
			t.Fatalf("ParseAddress(%q).Network = %q", a, o.Network)
		}
		if l := strings.ToLower(a); strings.Contains(l, "://") && !strings.HasPrefix(l, "redis://") && !strings.HasPrefix(l, "rediss://") {
			t.Fatalf("ParseAddress(%q) accepted another scheme", a)
		}
	})
}

func TestKeyFor(t *testing.T) {
	for _, tc := range []struct{ key, resource, want string }{
		{"", "jobs", "fencegw:jobs"},
		{"locks:{resource}:{resource}", "a", "locks:a:a"},
		{"one", "jobs", "one"},
		{"{resource}", "", ""},
	} {
		if got := (Options{Key: tc.key}).KeyFor(tc.resource); got != tc.want {
			t.Errorf("KeyFor(%q, %q) = %q, want %q", tc.key, tc.resource, got, tc.want)
		}
	}
}
