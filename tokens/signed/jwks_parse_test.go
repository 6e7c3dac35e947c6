package signed_test

import (
	"testing"

	"github.com/fencegw/fencegw/tokens/signed"
)

// TestParseJWKSRoundTrip: the keys a Keyring publishes parse back with
// their ids and algorithms.
func TestParseJWKSRoundTrip(t *testing.T) {
	for _, alg := range []string{"EdDSA", "ES256"} {
		k, err := signed.GenerateKey(alg)
		if err != nil {
			t.Fatal(err)
		}
		ring, err := signed.NewKeyring(k)
		if err != nil {
			t.Fatal(err)
		}
		set, err := ring.JWKS()
		if err != nil {
			t.Fatal(err)
		}
		keys, err := signed.ParseJWKS(set)
		if err != nil || len(keys) != 1 || keys[0].ID != k.ID || keys[0].Alg != alg || keys[0].CanSign() {
			t.Fatalf("%s: ParseJWKS = %v, %v", alg, keys, err)
		}
	}
	for _, bad := range []string{`{`, `{"keys":[]}`, `{"keys":[{"kty":"oct","k":"AAAA"}]}`, `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"!!"}]}`} {
		if _, err := signed.ParseJWKS([]byte(bad)); err == nil {
			t.Errorf("ParseJWKS(%s) accepted", bad)
		}
	}
}

func FuzzParseJWKS(f *testing.F) {
	f.Add([]byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"k","alg":"EdDSA"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := signed.ParseJWKS(data)
		if err != nil {
			return
		}
		for _, k := range keys {
			if k.CanSign() {
				t.Fatalf("a JWKS yielded a signing key: %v", k)
			}
		}
	})
}
