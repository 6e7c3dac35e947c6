package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestSignedClaimNamesThroughTheBinary: issue 8, item 11, through the
// binary. A gateway signs with a key file; tokens signed with that key
// whose claims name "epoch" in another case, give it twice, or were issued
// beyond the leeway in the future are refused with 401 and never reach the
// upstream; the same claims spelled exactly, and an iat within the leeway,
// are admitted.
func TestSignedClaimNamesThroughTheBinary(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "signing.pem")
	if _, stderr, code := runCLI(t, "keys", "generate", "--out", keyFile); code != 0 {
		t.Fatalf("keys generate: %s", stderr)
	}
	up := newRecorder(t)
	cfg := filepath.Join(dir, "gw.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("store: %q\nsigning:\n  key_file: %q\nroutes:\n  - prefix: /s/\n    upstream: %q\n",
		filepath.Join(dir, "s.db"), keyFile, up.srv.URL)), 0o600)
	p := start(t, "--config", cfg)
	sign := gatewaySigner(t, p, keyFile)

	now := time.Now().Unix()
	// claims returns the payload of a valid token for invoice-sweeper with
	// the members in extra first, then the rest; the epoch member is written
	// as epochMember (empty: none).
	claims := func(extra, epochMember string, iat int64) string {
		members := []string{`"iss":"fencegw"`, `"aud":"fencegw"`, `"sub":"node-a"`, `"res":"invoice-sweeper"`,
			fmt.Sprintf(`"iat":%d`, iat), fmt.Sprintf(`"exp":%d`, iat+60)}
		if epochMember != "" {
			members = append(members, epochMember)
		}
		if extra != "" {
			members = append([]string{extra}, members...)
		}
		return "{" + strings.Join(members, ",") + "}"
	}
	for _, c := range []struct {
		name, payload string
		status        int
	}{
		{"exact names", claims("", `"epoch":1`, now), http.StatusCreated},
		{"EPOCH for epoch", claims("", `"EPOCH":5`, now), http.StatusUnauthorized},
		{"Epoch beside epoch", claims(`"Epoch":9`, `"epoch":1`, now), http.StatusUnauthorized},
		{"epoch given twice", claims(`"epoch":9`, `"epoch":1`, now), http.StatusUnauthorized},
		{"RES for res", strings.Replace(claims("", `"epoch":1`, now), `"res"`, `"RES"`, 1), http.StatusUnauthorized},
		{"iat a minute in the future", claims("", `"epoch":1`, now+60), http.StatusUnauthorized},
		{"iat within the leeway", claims("", `"epoch":1`, now+2), http.StatusCreated},
		{"unknown members beside the claims", claims(`"epochs":7,"jti":"x"`, `"epoch":1`, now), http.StatusCreated},
	} {
		before := len(up.lines())
		s, typ := rawExchange(t, p.proxy, rawPost("POST", "/s/x", "Fencing-Token: "+sign(c.payload)))
		got := up.lines()[before:]
		switch {
		case s != c.status:
			t.Errorf("%s: %d %s, want %d", c.name, s, typ, c.status)
		case s == http.StatusUnauthorized && typ != "urn:fencegw:problem:unauthenticated-token":
			t.Errorf("%s: problem type %q", c.name, typ)
		case s == http.StatusUnauthorized && len(got) != 0:
			t.Errorf("%s: refused, yet the upstream received %q", c.name, got)
		case s == http.StatusCreated && (len(got) != 1 || !strings.HasSuffix(got[0], "Fencing-Resource=invoice-sweeper")):
			t.Errorf("%s: the upstream received %q", c.name, got)
		}
	}
	// The problem's detail names the check that failed.
	req, _ := http.NewRequest("POST", p.proxy+"/s/x", strings.NewReader("x"))
	req.Header.Set("Fencing-Token", sign(claims("", `"EPOCH":5`, now)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "differs from epoch only in case") {
		t.Errorf("EPOCH for epoch: %d %s", resp.StatusCode, body)
	}
}

// gatewaySigner returns a function that signs a payload, as given, with the
// gateway's EdDSA key file under the key id its JWKS publishes.
func gatewaySigner(t *testing.T, p *proc, keyFile string) func(payload string) string {
	t.Helper()
	resp, err := http.Get(p.api + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	json.NewDecoder(resp.Body).Decode(&set)
	resp.Body.Close()
	pem, _ := os.ReadFile(keyFile)
	key, err := jwt.ParseEdPrivateKeyFromPEM(pem)
	if err != nil || len(set.Keys) != 1 {
		t.Fatalf("key: %v, %d published", err, len(set.Keys))
	}
	header := fmt.Sprintf(`{"alg":"EdDSA","typ":"JWT","kid":%q}`, set.Keys[0].Kid)
	b64 := base64.RawURLEncoding.EncodeToString
	return func(payload string) string {
		input := b64([]byte(header)) + "." + b64([]byte(payload))
		sig, err := jwt.SigningMethodEdDSA.Sign(input, key)
		if err != nil {
			t.Fatal(err)
		}
		return input + "." + b64(sig)
	}
}
