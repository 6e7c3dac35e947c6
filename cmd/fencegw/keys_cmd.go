package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/fencegw/fencegw/config"
	"github.com/fencegw/fencegw/tokens/signed"
)

func newKeysCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Make a signing key (generate) or a control API key (api-key)",
	}
	cmd.AddCommand(newKeysGenerateCmd(), newKeysAPIKeyCmd())
	return cmd
}

func newKeysGenerateCmd() *cobra.Command {
	var alg, out, pubOut string
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Make a signing key as PEM (to --out FILE with mode 0600, or stdout)",
		Long: `Make a signing key as PEM: to --out FILE with mode 0600 (never overwritten), or stdout.

EdDSA and ES256 keys are plain PKCS#8 ("PRIVATE KEY") and PKIX ("PUBLIC KEY")
blocks that OpenSSL and other tools read; their key id is the key's RFC 7638
thumbprint, derived again when the file is loaded. An HS256 secret is a
"FENCEGW HS256 SECRET" block carrying its random key id in a Kid header: no
standard PEM form holds an HMAC secret.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return keysGenerate(cmd, alg, out, pubOut)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&alg, "alg", signed.AlgEdDSA, "`algorithm`: EdDSA, ES256 or HS256")
	cmd.RegisterFlagCompletionFunc("alg", cobra.FixedCompletions(
		[]cobra.Completion{signed.AlgEdDSA, signed.AlgES256, signed.AlgHS256}, cobra.ShellCompDirectiveNoFileComp))
	fs.StringVar(&out, "out", "", "write the private key to `file` (mode 0600; never overwritten)")
	fs.StringVar(&pubOut, "public-out", "", "also write the public key to `file` (not for HS256)")
	return cmd
}

func keysGenerate(cmd *cobra.Command, alg, out, pubOut string) error {
	switch alg {
	case signed.AlgEdDSA, signed.AlgES256:
	case signed.AlgHS256:
		if pubOut != "" {
			return badUsage(cmd, errors.New("--public-out: an HS256 secret has no public half"))
		}
	default:
		return badUsage(cmd, fmt.Errorf("--alg %q: want EdDSA, ES256 or HS256", alg))
	}
	k, err := signed.GenerateKey(alg)
	if err != nil {
		return failure(err)
	}
	priv, err := k.MarshalPrivatePEM()
	if err != nil {
		return failure(err)
	}
	if out == "" {
		cmd.OutOrStdout().Write(priv)
	} else if err := writeNew(out, priv, 0o600); err != nil {
		return failure(err)
	}
	if pubOut != "" {
		pub, err := k.Public().MarshalPublicPEM()
		if err == nil {
			err = writeNew(pubOut, pub, 0o644)
		}
		if err != nil {
			return failure(err)
		}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "generated %s key %s\n", k.Alg, k.ID)
	return nil
}

const apiKeyLong = `Make a control API key. The key itself, the secret to give to the caller, is
printed alone on one line of stdout; the api_keys entry that admits it, which
holds only the key's SHA-256, is printed on stderr as YAML to add to the
gateway's configuration:

  fencegw keys api-key --name sweeper --leases 'invoice-*' >sweeper.key 2>entry.yaml

--name and every --leases pattern are checked by the configuration's own rules
for api_keys before anything is printed; control characters are refused.`

func newKeysAPIKeyCmd() *cobra.Command {
	var name, leases string
	var admin bool
	cmd := &cobra.Command{
		Use:   "api-key",
		Short: "Make a control API key, and the api_keys entry that admits it",
		Long:  apiKeyLong,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return keysAPIKey(cmd, name, leases, admin)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&name, "name", "", "the caller's `name` (required)")
	fs.StringVar(&leases, "leases", "", "comma-separated lease-name `patterns` the key may use (or --admin)")
	fs.BoolVar(&admin, "admin", false, "an admin key: every lease and the fence endpoints")
	return cmd
}

// apiKeyEntry is an api_keys entry as the configuration reads it.
type apiKeyEntry struct {
	Name   string   `yaml:"name"`
	SHA256 string   `yaml:"sha256"`
	Leases []string `yaml:"leases,omitempty,flow"`
	Admin  bool     `yaml:"admin,omitempty"`
}

func keysAPIKey(cmd *cobra.Command, name, leases string, admin bool) error {
	if name == "" || (leases == "" && !admin) {
		return badUsage(cmd, errors.New("--name and either --leases or --admin are required"))
	}
	var patterns []string
	if leases != "" {
		for _, p := range strings.Split(leases, ",") {
			patterns = append(patterns, strings.TrimSpace(p))
		}
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return failure(err)
	}
	key := "fgw_" + base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(key))
	e := apiKeyEntry{Name: name, SHA256: hex.EncodeToString(sum[:]), Leases: patterns, Admin: admin}
	if err := checkAPIKeyEntry(e); err != nil {
		return badUsage(cmd, err)
	}
	snippet, err := apiKeySnippet(e)
	if err != nil {
		return failure(err)
	}
	fmt.Fprintln(cmd.OutOrStdout(), key)
	fmt.Fprintf(cmd.ErrOrStderr(), "# The api_keys entry for %s (the key is on stdout: give it to the caller).\n%s", quoteYAML(name), snippet)
	return nil
}

// checkAPIKeyEntry checks e by the configuration's rules for an api_keys
// entry, and refuses control characters in its lease patterns too (the
// configuration takes them, but no lease name the gateway grants has one).
func checkAPIKeyEntry(e apiKeyEntry) error {
	for _, p := range e.Leases {
		if strings.ContainsFunc(p, unicode.IsControl) {
			return fmt.Errorf("--leases %q: a pattern has no control characters", p)
		}
	}
	c := config.Default()
	c.APIKeys = []config.APIKey{{Name: e.Name, SHA256: e.SHA256, Leases: e.Leases, Admin: e.Admin}}
	var errs []error
	for _, err := range unjoin(c.Validate()) {
		var fe *config.FieldError
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "api_keys[0].") {
			continue
		}
		flag := "--name"
		if !strings.HasPrefix(fe.Field, "api_keys[0].name") {
			flag = "--leases"
		}
		errs = append(errs, fmt.Errorf("%s: %s", flag, fe.Msg))
	}
	return errors.Join(errs...)
}

// unjoin returns the errors that err joins, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// apiKeySnippet encodes e as a YAML api_keys list with a YAML encoder, each
// $ doubled so that the configuration's ${NAME} expansion reads back the
// values as given.
func apiKeySnippet(e apiKeyEntry) (string, error) {
	e.Name = escapeDollar(e.Name)
	for i, p := range e.Leases {
		e.Leases[i] = escapeDollar(p)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(map[string][]apiKeyEntry{"api_keys": {e}}); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}

func escapeDollar(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// quoteYAML is s as a one-line double-quoted YAML/JSON string, for a
// comment.
func quoteYAML(s string) string { return fmt.Sprintf("%q", s) }

// writeNew creates path with data, refusing to overwrite.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return errors.Join(err, os.Remove(path))
	}
	return f.Close()
}
