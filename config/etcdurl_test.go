package config_test

import (
	"errors"
	"net"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/config"
)

var parseURLCases = []struct {
	in      string
	want    config.EtcdURL
	wantErr string // substring of the error; "" for success
}{
	{in: "etcd://127.0.0.1:2379", want: config.EtcdURL{Endpoints: []string{"127.0.0.1:2379"}, Prefix: ""}},
	{in: "etcd://127.0.0.1:2379/", want: config.EtcdURL{Endpoints: []string{"127.0.0.1:2379"}, Prefix: ""}},
	{in: "etcd://a:1,b.example.com:2,[::1]:3/app", want: config.EtcdURL{Endpoints: []string{"a:1", "b.example.com:2", "[::1]:3"}, Prefix: "/app/"}},
	{in: "ETCD://a:1/app/hwm/", want: config.EtcdURL{Endpoints: []string{"a:1"}, Prefix: "/app/hwm/"}},
	{in: "etcd+http://a:1/x", want: config.EtcdURL{Endpoints: []string{"a:1"}, Prefix: "/x/"}},
	{in: "etcd+https://a:1,b:2/x", want: config.EtcdURL{Endpoints: []string{"https://a:1", "https://b:2"}, Prefix: "/x/"}},
	{in: "etcd://u:p%40ss%2Fw@a:1/x%20y", want: config.EtcdURL{Endpoints: []string{"a:1"}, Prefix: "/x y/", Username: "u", Password: "p@ss/w"}},
	{in: "etcd://u:p@ss@a:1", want: config.EtcdURL{Endpoints: []string{"a:1"}, Prefix: "", Username: "u", Password: "p@ss"}},
	{in: "etcd://u:p@a:1/team@x", want: config.EtcdURL{Endpoints: []string{"a:1"}, Prefix: "/team@x/", Username: "u", Password: "p"}},
	{in: "etcd://a:65535", want: config.EtcdURL{Endpoints: []string{"a:65535"}, Prefix: ""}},

	{in: "", wantErr: "missing scheme"},
	{in: "127.0.0.1:2379", wantErr: "missing scheme"},
	{in: "http://a:1", wantErr: `unsupported scheme "http"`},
	{in: "etcd+grpc://a:1", wantErr: `unsupported scheme "etcd+grpc"`},
	{in: "u:secret@etcd://a:1", wantErr: "malformed scheme"},
	{in: "etcd://", wantErr: "no host:port"},
	{in: "etcd:///prefix", wantErr: "no host:port"},
	{in: "etcd://a", wantErr: `host "a": want host:port`},
	{in: "etcd://a:", wantErr: "missing port"},
	{in: "etcd://:1", wantErr: "empty host name"},
	{in: "etcd://a:0", wantErr: "not a number from 1 to 65535"},
	{in: "etcd://a:65536", wantErr: "not a number from 1 to 65535"},
	{in: "etcd://a:02379", wantErr: "not a number from 1 to 65535"},
	{in: "etcd://a:http", wantErr: "not a number from 1 to 65535"},
	{in: "etcd://a:1,,b:2", wantErr: "empty host:port at position 2"},
	{in: "etcd://a:1,", wantErr: "empty host:port at position 2"},
	{in: "etcd://a:1,a:1", wantErr: `"a:1" listed twice`},
	{in: "etcd://::1:2379", wantErr: "want host:port"},
	{in: "etcd://[fe80::1%25eth0]:1", wantErr: "IPv6 address without zone"},
	{in: "etcd://[127.0.0.1]:1", wantErr: "IPv6 address"},
	{in: "etcd://a b:1", wantErr: "not allowed in a host name"},
	{in: "etcd://a..b:1", wantErr: "empty label"},
	{in: "etcd://300.1.1.1:1", wantErr: "not a valid IPv4 address"},
	{in: "etcd://a:1?x=y", wantErr: "query strings are not supported"},
	{in: "etcd://a:1/p#frag", wantErr: "fragments are not supported"},
	{in: "etcd://u@a:1", wantErr: "user info must be user:password"},
	{in: "etcd://u:@a:1", wantErr: "user info must be user:password"},
	{in: "etcd://:p@a:1", wantErr: "user info must be user:password"},
	{in: "etcd://u:%zz@a:1", wantErr: "password: bad percent-encoding"},
	{in: "etcd://u:se/cret@a:1", wantErr: "'@' after the host list"},
	{in: "etcd://a:1/%zz", wantErr: "prefix: bad percent-encoding"},
	{in: "etcd://a:1/%ff", wantErr: "not valid UTF-8"},
	{in: "etcd://a:1/x%0Ay", wantErr: "control character"},
}

func TestParseEtcdURL(t *testing.T) {
	for _, tc := range parseURLCases {
		got, err := config.ParseEtcdURL(tc.in)
		if tc.wantErr != "" {
			if err == nil {
				t.Errorf("ParseURL(%q) = %+v, want error containing %q", tc.in, got, tc.wantErr)
				continue
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, config.ErrInvalidEtcdURL) {
				t.Errorf("ParseURL(%q) error = %v, want ErrInvalidURL containing %q", tc.in, err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "cret") {
				t.Errorf("ParseURL(%q) error quotes the password: %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, config.EtcdURL{}) {
				t.Errorf("ParseURL(%q) returned %+v with its error", tc.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseURL(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// formatURL writes o back as a store URL.
func formatURL(o config.EtcdURL) string {
	scheme := "etcd://"
	var hosts []string
	for _, ep := range o.Endpoints {
		if h, ok := strings.CutPrefix(ep, "https://"); ok {
			scheme = "etcd+https://"
			ep = h
		}
		hosts = append(hosts, ep)
	}
	var user string
	if o.Username != "" {
		user = url.UserPassword(o.Username, o.Password).String() + "@"
	}
	segs := strings.Split(o.Prefix, "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(url.PathEscape(s), "@", "%40")
	}
	return scheme + user + strings.Join(hosts, ",") + strings.Join(segs, "/")
}

// FuzzParseURL checks that ParseURL never panics, that what it accepts is
// well formed, and that it parses its own output back to the same Options.
func FuzzParseEtcdURL(f *testing.F) {
	for _, tc := range parseURLCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		o, err := config.ParseEtcdURL(in)
		if err != nil {
			if !errors.Is(err, config.ErrInvalidEtcdURL) {
				t.Fatalf("ParseURL(%q) error %v does not wrap ErrInvalidURL", in, err)
			}
			if !reflect.DeepEqual(o, config.EtcdURL{}) {
				t.Fatalf("ParseURL(%q) returned %+v with its error", in, o)
			}
			return
		}
		if len(o.Endpoints) == 0 {
			t.Fatalf("ParseURL(%q) accepted no endpoints", in)
		}
		tls := strings.HasPrefix(o.Endpoints[0], "https://")
		for _, ep := range o.Endpoints {
			hp, secure := strings.CutPrefix(ep, "https://")
			if secure != tls {
				t.Fatalf("ParseURL(%q) mixed TLS: %q", in, o.Endpoints)
			}
			host, port, err := net.SplitHostPort(hp)
			if err != nil || host == "" || port == "" {
				t.Fatalf("ParseURL(%q) endpoint %q is not host:port", in, ep)
			}
		}
		if o.Prefix != "" && (!strings.HasPrefix(o.Prefix, "/") || !strings.HasSuffix(o.Prefix, "/")) {
			t.Fatalf("ParseURL(%q) prefix %q does not start and end with /", in, o.Prefix)
		}
		if (o.Username == "") != (o.Password == "") {
			t.Fatalf("ParseURL(%q) half credentials: %q/%q", in, o.Username, o.Password)
		}
		again, err := config.ParseEtcdURL(formatURL(o))
		if err != nil {
			t.Fatalf("ParseURL(%q) = %+v, but its formatted form %q fails: %v", in, o, formatURL(o), err)
		}
		if !reflect.DeepEqual(again, o) {
			t.Fatalf("ParseURL(%q) = %+v, round trip through %q gives %+v", in, o, formatURL(o), again)
		}
	})
}
