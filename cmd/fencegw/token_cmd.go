package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/tokens/signed"
)

const tokenUsage = `Usage:
  fencegw token inspect TOKEN [--key FILE]... [--api URL] [--issuer fencegw] [--audience fencegw]
      decode a token and verify it with the key files given, or else with the
      gateway's published keys (GET --api/.well-known/jwks.json; for an https
      control API: --tls-ca FILE, --tls-cert FILE --tls-key FILE, --tls-server-name NAME)
`

func tokenCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 || args[0] != "inspect" {
		fmt.Fprint(stderr, tokenUsage)
		return 2
	}
	fs := flag.NewFlagSet("fencegw token inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var keyFiles stringList
	fs.Var(&keyFiles, "key", "a PEM key `file` to verify with (repeatable)")
	api := addAPIFlags(fs, false)
	defaults := config.Default().Signing
	issuer := fs.String("issuer", defaults.Issuer, "expected `iss`")
	audience := fs.String("audience", defaults.Audience, "expected `aud`")
	// The token may come before or after the flags.
	rest := args[1:]
	var token string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		token, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	if token == "" && fs.NArg() == 1 {
		token = fs.Arg(0)
	}
	if token == "" {
		fmt.Fprint(stderr, tokenUsage)
		return 2
	}
	token = strings.TrimSpace(token)
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		fmt.Fprintln(stderr, "fencegw token inspect: not a compact JWT (three dot-separated parts)")
		return 1
	}
	for i, label := range []string{"header", "claims"} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil || !json.Valid(b) {
			fmt.Fprintf(stderr, "fencegw token inspect: the %s is not base64url JSON\n", label)
			return 1
		}
		fmt.Fprintf(stdout, "%s: %s\n", label, b)
	}
	keys, err := inspectKeys(ctx, keyFiles, api)
	if err != nil {
		fmt.Fprintf(stdout, "signature: not checked (%v)\n", err)
		return 1
	}
	ring, err := signed.NewKeyring(nil, keys...)
	if err == nil {
		var v *signed.Verifier
		if v, err = signed.NewVerifier(ring, *issuer, *audience, signed.WithCacheSize(0)); err == nil {
			var c signed.Claims
			if c, err = v.VerifyClaims(token); err == nil {
				fmt.Fprintf(stdout, "verified: key %s, holder %q, resource %q, epoch %d, expires %s\n",
					c.KeyID, c.Holder, c.Resource, c.Epoch, c.Expires.UTC().Format("2006-01-02T15:04:05Z"))
				return 0
			}
		}
	}
	fmt.Fprintf(stdout, "NOT VERIFIED: %v\n", err)
	return 1
}

// inspectKeys loads the key files, or else the gateway's JWKS.
func inspectKeys(ctx context.Context, files []string, api *apiFlags) ([]*signed.Key, error) {
	var keys []*signed.Key
	for _, f := range files {
		k, err := signed.LoadKeyFile(f)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k.Public())
	}
	if len(keys) > 0 {
		return keys, nil
	}
	c, err := api.client(apiTimeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	a, err := c.Do(ctx, http.MethodGet, "/.well-known/jwks.json", nil)
	if err != nil {
		return nil, fmt.Errorf("fetch JWKS: %w", err)
	}
	if a.Status != http.StatusOK {
		return nil, fmt.Errorf("fetch JWKS: status %d", a.Status)
	}
	return signed.ParseJWKS(a.Body)
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
