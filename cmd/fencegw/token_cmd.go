package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/tokens/signed"
)

const tokenLong = `Decode a token and verify it with the key files given (--key), or else with the
gateway's published keys (GET --api/.well-known/jwks.json; for an https control
API: --tls-ca FILE, --tls-cert FILE --tls-key FILE, --tls-server-name NAME).
Exits 0 when the token verifies, 1 when it does not or cannot be checked.`

func newTokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Decode and verify a token",
	}
	cmd.AddCommand(newTokenInspectCmd())
	return cmd
}

// tokenOpts are the flags of token inspect.
type tokenOpts struct {
	keyFiles         []string
	api              *apiFlags
	issuer, audience string
}

func newTokenInspectCmd() *cobra.Command {
	o := &tokenOpts{}
	cmd := &cobra.Command{
		Use:               "inspect TOKEN",
		Short:             "Decode a token and verify it with key files or the gateway's published keys",
		Long:              tokenLong,
		Args:              exactArgs(1, "the TOKEN"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(o.keyFiles) == 0 {
				if err := o.api.check(); err != nil {
					return badUsage(cmd, err)
				}
			}
			return o.inspect(cmd.Context(), cmd.OutOrStdout(), args[0])
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&o.keyFiles, "key", nil, "a PEM key `file` to verify with (repeatable)")
	o.api = addAPIFlags(fs, false)
	defaults := config.Default().Signing
	fs.StringVar(&o.issuer, "issuer", defaults.Issuer, "expected `iss`")
	fs.StringVar(&o.audience, "audience", defaults.Audience, "expected `aud`")
	return cmd
}

// inspect prints the token's header and claims, then whether it verifies.
func (o *tokenOpts) inspect(ctx context.Context, stdout io.Writer, token string) error {
	token = strings.TrimSpace(token)
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return failuref("not a compact JWT (three dot-separated parts)")
	}
	for i, label := range []string{"header", "claims"} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil || !json.Valid(b) {
			return failuref("the %s is not base64url JSON", label)
		}
		fmt.Fprintf(stdout, "%s: %s\n", label, b)
	}
	keys, err := inspectKeys(ctx, o.keyFiles, o.api)
	if err != nil {
		fmt.Fprintf(stdout, "signature: not checked (%v)\n", err)
		return reported(err)
	}
	ring, err := signed.NewKeyring(nil, keys...)
	if err == nil {
		var v *signed.Verifier
		if v, err = signed.NewVerifier(ring, o.issuer, o.audience, signed.WithCacheSize(0)); err == nil {
			var c signed.Claims
			if c, err = v.VerifyClaims(token); err == nil {
				fmt.Fprintf(stdout, "verified: key %s, holder %q, resource %q, epoch %d, expires %s\n",
					c.KeyID, c.Holder, c.Resource, c.Epoch, c.Expires.UTC().Format("2006-01-02T15:04:05Z"))
				return nil
			}
		}
	}
	fmt.Fprintf(stdout, "NOT VERIFIED: %v\n", err)
	return reported(err)
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
