package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fencegw/fencegw/tokens/signed"
)

const keysUsage = `Usage:
  fencegw keys generate [--alg EdDSA|ES256|HS256] [--out FILE] [--public-out FILE]
      a signing key as PEM (to FILE with mode 0600, or stdout)
  fencegw keys api-key --name NAME [--leases 'pattern,…'] [--admin]
      a control API key, and the api_keys entry that admits it
`

func keysCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, keysUsage)
		return 2
	}
	switch args[0] {
	case "generate":
		return keysGenerate(args[1:], stdout, stderr)
	case "api-key":
		return keysAPIKey(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "fencegw keys: unknown command %q\n\n%s", args[0], keysUsage)
		return 2
	}
}

func keysGenerate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fencegw keys generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	alg := fs.String("alg", signed.AlgEdDSA, "`algorithm`: EdDSA, ES256 or HS256")
	out := fs.String("out", "", "write the private key to `file` (mode 0600; never overwritten)")
	pubOut := fs.String("public-out", "", "also write the public key to `file` (not for HS256)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	k, err := signed.GenerateKey(*alg)
	if err != nil {
		fmt.Fprintf(stderr, "fencegw keys generate: %v\n", err)
		return 1
	}
	priv, err := k.MarshalPrivatePEM()
	if err != nil {
		fmt.Fprintf(stderr, "fencegw keys generate: %v\n", err)
		return 1
	}
	if *out == "" {
		stdout.Write(priv)
	} else if err := writeNew(*out, priv, 0o600); err != nil {
		fmt.Fprintf(stderr, "fencegw keys generate: %v\n", err)
		return 1
	}
	if *pubOut != "" {
		if k.IsSymmetric() {
			fmt.Fprintln(stderr, "fencegw keys generate: an HS256 secret has no public half")
			return 1
		}
		pub, err := k.Public().MarshalPublicPEM()
		if err == nil {
			err = writeNew(*pubOut, pub, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "fencegw keys generate: %v\n", err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "generated %s key %s\n", k.Alg, k.ID)
	return 0
}

func keysAPIKey(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fencegw keys api-key", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "the caller's `name`")
	leases := fs.String("leases", "", "comma-separated lease-name `patterns` the key may use")
	admin := fs.Bool("admin", false, "an admin key: every lease and the fence endpoints")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *name == "" || (*leases == "" && !*admin) {
		fmt.Fprintln(stderr, "fencegw keys api-key: --name and either --leases or --admin are required")
		return 2
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		fmt.Fprintf(stderr, "fencegw keys api-key: %v\n", err)
		return 1
	}
	key := "fgw_" + base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(key))
	fmt.Fprintf(stdout, "# API key for %s: give it to the caller, keep only the hash below.\n# %s\napi_keys:\n  - name: %q\n    sha256: %q\n",
		*name, key, *name, hex.EncodeToString(sum[:]))
	if *leases != "" {
		fmt.Fprintf(stdout, "    leases: [%s]\n", quoteList(strings.Split(*leases, ",")))
	}
	if *admin {
		fmt.Fprintln(stdout, "    admin: true")
	}
	return 0
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", strings.TrimSpace(x))
	}
	return strings.Join(q, ", ")
}

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
