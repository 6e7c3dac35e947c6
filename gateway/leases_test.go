package gateway_test

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/wire"

	"github.com/fencegw/fencegw/policy"
)

func (g *gw) leaseCall(t *testing.T, name, op, body string, header map[string]string) answer {
	t.Helper()
	if header == nil {
		header = map[string]string{}
	}
	header["Content-Type"] = "application/json"
	return do(t, "POST", g.api.URL+"/v1/leases/"+name+"/"+op, header, body)
}

func (g *gw) acquire(t *testing.T, name, holder string, ttl float64) answer {
	t.Helper()
	return g.leaseCall(t, name, "acquire", fmt.Sprintf(`{"holder":%q,"ttl_seconds":%v}`, holder, ttl), nil)
}

func (g *gw) renewLease(t *testing.T, name, holder string, epoch int64) answer {
	t.Helper()
	return g.leaseCall(t, name, "renew", fmt.Sprintf(`{"holder":%q,"epoch":%d}`, holder, epoch), nil)
}

func (g *gw) releaseLease(t *testing.T, name, holder string, epoch int64) answer {
	t.Helper()
	return g.leaseCall(t, name, "release", fmt.Sprintf(`{"holder":%q,"epoch":%d}`, holder, epoch), nil)
}

func leaseOf(t *testing.T, a answer) wire.LeaseState {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("lease call = %d %s", a.status, a.body)
	}
	var l wire.LeaseState
	if err := json.Unmarshal(a.body, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// leaseRoutes write to leased resources with raw epochs too: the tests
// that use them trust their clients (raw_on_leased: allow); see
// TestRawEpochNeverImpersonatesALease for the default.
var leaseRoutes = []routeSpec{
	{prefix: "/signed/", tokens: policy.TokensSigned},
	{prefix: "/bound/", tokens: policy.TokensSigned, resource: "invoice-sweeper"},
	{prefix: "/raw/", resource: "invoice-sweeper", rawOnLeased: true},
	{prefix: "/any/", tokens: policy.TokensAny, resource: "invoice-sweeper", rawOnLeased: true},
}

// TestLeaseLifecycle runs the token authority's contract against every
// store: acquire, 409, renew, retried renew, expiry, takeover, the old token
// fenced before the new holder writes, release and re-acquire.
func TestLeaseLifecycle(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			up := newUpstream(t)
			g := newGatewayWith(t, b.fresh(t)(t), up, gatewayOptions{}, leaseRoutes...)

			// 2s: etcd tells a lease's life in whole seconds, rounded
			// down, so a 1s grant has no writable time on it.
			a := leaseOf(t, g.acquire(t, "invoice-sweeper", "node-a", 2))
			if a.Epoch != 1 || a.Holder != "node-a" || !a.Held || a.Token == "" || a.TokenExpiresAt == nil {
				t.Fatalf("acquire = %+v", a)
			}
			// The token writes through signed routes.
			for _, p := range []string{"/signed/x", "/bound/x", "/any/x"} {
				if r := g.write(t, p, a.Token); r.status != http.StatusCreated {
					t.Fatalf("node-a's token on %s = %d %s", p, r.status, r.body)
				}
			}
			// Held by another: 409 with holder, expires_at and Retry-After.
			r := g.acquire(t, "invoice-sweeper", "node-b", 15)
			if r.status != http.StatusConflict || r.header.Get("Retry-After") == "" {
				t.Fatalf("acquire while held = %d (Retry-After %q) %s", r.status, r.header.Get("Retry-After"), r.body)
			}
			if p := r.problem(t); p["holder"] != "node-a" || p["expires_at"] == nil || p["type"] != problem.TypeLeaseHeld {
				t.Fatalf("409 problem = %v", p)
			}
			// Renew keeps the epoch; a retried renew is as good.
			for i := 0; i < 2; i++ {
				rn := leaseOf(t, g.renewLease(t, "invoice-sweeper", "node-a", int64(a.Epoch)))
				if rn.Epoch != a.Epoch || rn.Token == "" {
					t.Fatalf("renew %d = %+v", i, rn)
				}
			}
			// node-a stops renewing; node-b takes over once the lease lapses.
			var b2 wire.LeaseState
			deadline := time.Now().Add(20 * time.Second)
			for {
				r := g.acquire(t, "invoice-sweeper", "node-b", 15)
				if r.status == http.StatusOK {
					b2 = leaseOf(t, r)
					break
				}
				if r.status != http.StatusConflict || time.Now().After(deadline) {
					t.Fatalf("takeover = %d %s", r.status, r.body)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if b2.Epoch != a.Epoch+1 {
				t.Fatalf("takeover epoch %d, want %d", b2.Epoch, a.Epoch+1)
			}
			// node-b has not written yet, and node-a's token is already fenced.
			before := len(up.requests())
			for _, p := range []string{"/signed/x", "/bound/x"} {
				r := g.write(t, p, a.Token)
				if r.status != http.StatusPreconditionFailed {
					t.Fatalf("old token on %s after takeover = %d %s", p, r.status, r.body)
				}
				if pr := r.problem(t); pr["current_epoch"] != b2.Epoch.String() || pr["presented_epoch"] != a.Epoch.String() {
					t.Fatalf("412 problem = %v", pr)
				}
			}
			if r := g.write(t, "/raw/x", strconv.FormatInt(int64(a.Epoch), 10)); r.status != http.StatusPreconditionFailed {
				t.Fatalf("old raw epoch after takeover = %d", r.status)
			}
			if len(up.requests()) != before {
				t.Fatal("a fenced write reached the upstream")
			}
			if r := g.renewLease(t, "invoice-sweeper", "node-a", int64(a.Epoch)); r.status != http.StatusConflict ||
				r.problem(t)["type"] != problem.TypeLeaseLost {
				t.Fatalf("old holder's renew = %d %s", r.status, r.body)
			}
			if r := g.write(t, "/signed/x", b2.Token); r.status != http.StatusCreated {
				t.Fatalf("new holder's write = %d %s", r.status, r.body)
			}
			// Release, retried release, re-acquire: the epoch rises and the fence follows.
			for i := 0; i < 2; i++ {
				if r := g.releaseLease(t, "invoice-sweeper", "node-b", int64(b2.Epoch)); r.status != http.StatusNoContent {
					t.Fatalf("release %d = %d %s", i, r.status, r.body)
				}
			}
			if r := g.releaseLease(t, "invoice-sweeper", "node-a", int64(a.Epoch)); r.status != http.StatusConflict {
				t.Fatalf("release by a former holder = %d", r.status)
			}
			c := leaseOf(t, g.acquire(t, "invoice-sweeper", "node-c", 15))
			if int64(c.Epoch) != int64(b2.Epoch)+1 || g.fenceEpoch(t, "invoice-sweeper") != int64(c.Epoch) {
				t.Fatalf("re-acquire = epoch %d, fence %d", c.Epoch, g.fenceEpoch(t, "invoice-sweeper"))
			}
			if r := g.write(t, "/signed/x", b2.Token); r.status != http.StatusPreconditionFailed {
				t.Fatalf("released holder's token = %d", r.status)
			}
			got := leaseOf(t, do(t, "GET", g.api.URL+"/v1/leases/invoice-sweeper", nil, ""))
			if got.Holder != "node-c" || got.Epoch != c.Epoch || !got.Held || got.Token != "" {
				t.Fatalf("GET lease = %+v", got)
			}
			if r := do(t, "GET", g.api.URL+"/v1/leases/unknown", nil, ""); r.status != http.StatusNotFound {
				t.Fatalf("GET unknown lease = %d", r.status)
			}
		})
	}
}

func TestLeaseBadBodies(t *testing.T) {
	g := newGatewayWith(t, boltFresh(t)(t), newUpstream(t), gatewayOptions{}, leaseRoutes...)
	for op, bodies := range map[string][]string{
		"acquire": {``, `not json`, `{}`, `{"holder":"a"}`, `{"ttl_seconds":5}`, `{"holder":"","ttl_seconds":5}`,
			`{"holder":"a","ttl_seconds":0}`, `{"holder":"a","ttl_seconds":-1}`, `{"holder":"a","ttl_seconds":"5"}`,
			`{"holder":"a","ttl_seconds":5,"extra":1}`, `{"holder":"a","ttl_seconds":5} {}`, `[1]`,
			`{"holder":"a\nb","ttl_seconds":5}`, `{"holder":"a","ttl_seconds":1e9}`,
			// Names that encoding/json would match anyway, and a member twice:
			// a proxy reading names exactly, or the first of two, would read
			// another request than the gateway.
			`{"Holder":"a","ttl_seconds":5}`, `{"holder":"a","TTL_SECONDS":5}`, `{"holder":"a","holder":"b","ttl_seconds":5}`},
		"renew": {``, `{}`, `{"holder":"a"}`, `{"epoch":1}`, `{"holder":"a","epoch":0}`, `{"holder":"a","epoch":1.5}`, `{"holder":"a","epoch":"1.0"}`, `{"holder":"a","epoch":"0x1"}`,
			`{"holder":"a","Epoch":1}`, `{"HOLDER":"a","EPOCH":"1"}`, `{"holder":"a","epoch":8,"epoch":1}`, `{"holder":"b","holder":"a","epoch":1}`},
		"release": {`{"holder":"","epoch":1}`, `{"holder":"a","epoch":-1}`, `nope`},
	} {
		for _, body := range bodies {
			r := g.leaseCall(t, "lease", op, body, nil)
			if r.status != http.StatusBadRequest {
				t.Errorf("%s %q = %d %s", op, body, r.status, r.body)
				continue
			}
			r.problem(t)
		}
	}
	if r := do(t, "GET", g.api.URL+"/v1/leases/lease", nil, ""); r.status != http.StatusNotFound {
		t.Fatalf("bad bodies created the lease: %d", r.status)
	}
}

// TestSignedTokenChecks refuses forged, expired, misdirected and raw tokens
// on signed routes, and verifies issued tokens with the published JWKS.
func TestSignedTokenChecks(t *testing.T) {
	up := newUpstream(t)
	g := newGatewayWith(t, boltFresh(t)(t), up, gatewayOptions{}, leaseRoutes...)
	a := leaseOf(t, g.acquire(t, "invoice-sweeper", "node-a", 15))
	other := leaseOf(t, g.acquire(t, "report-generator", "node-x", 15))
	parts := strings.Split(a.Token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a compact JWS", a.Token)
	}

	// The published key verifies the token, whose claims are as documented.
	var jwks struct {
		Keys []struct{ Kty, Crv, X, Kid, Alg, Use string } `json:"keys"`
	}
	jr := do(t, "GET", g.api.URL+"/.well-known/jwks.json", nil, "")
	if err := json.Unmarshal(jr.body, &jwks); err != nil || len(jwks.Keys) != 1 {
		t.Fatalf("JWKS %s: %v", jr.body, err)
	}
	k := jwks.Keys[0]
	header, claims := decodeSegment(t, parts[0]), decodeSegment(t, parts[1])
	if k.Kty != "OKP" || k.Crv != "Ed25519" || k.Alg != "EdDSA" || k.Kid != header["kid"] || header["alg"] != "EdDSA" {
		t.Fatalf("JWKS key %+v, token header %v", k, header)
	}
	pub, _ := base64.RawURLEncoding.DecodeString(k.X)
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	if !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
		t.Fatal("the JWKS key does not verify the issued token")
	}
	for _, c := range []string{"iss", "aud", "sub", "res", "epoch", "iat", "exp"} {
		if _, ok := claims[c]; !ok {
			t.Fatalf("claims %v lack %q", claims, c)
		}
	}
	if claims["sub"] != "node-a" || claims["res"] != "invoice-sweeper" || claims["epoch"] != float64(a.Epoch) {
		t.Fatalf("claims = %v", claims)
	}

	flip := func(s string) string {
		b := []byte(s)
		b[len(b)/2] ^= 1
		return string(b)
	}
	noneHeader := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"` + k.Kid + `"}`))
	hsHeader := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT","kid":"` + k.Kid + `"}`))
	cases := map[string]struct {
		path, token string
		status      int
	}{
		"tampered signature": {"/signed/x", parts[0] + "." + parts[1] + "." + flip(parts[2]), 401},
		"tampered claims":    {"/signed/x", parts[0] + "." + flip(parts[1]) + "." + parts[2], 401},
		"alg none":           {"/signed/x", noneHeader + "." + parts[1] + ".", 401},
		"alg HS256 confusion": {"/signed/x", hsHeader + "." + parts[1] + "." +
			base64.RawURLEncoding.EncodeToString(hmacSHA256(pub, hsHeader+"."+parts[1])), 401},
		"raw integer on a signed route":    {"/signed/x", strconv.FormatInt(int64(a.Epoch), 10), 401},
		"garbage":                          {"/signed/x", "abc", 401},
		"another lease's token, bound":     {"/bound/x", other.Token, 403},
		"valid token, bound":               {"/bound/x", a.Token, 201},
		"another lease's token, unbound":   {"/signed/x", other.Token, 201},
		"raw epoch above issued (raw)":     {"/raw/x", strconv.FormatInt(int64(a.Epoch)+1, 10), 403},
		"raw epoch at issued (raw)":        {"/raw/x", strconv.FormatInt(int64(a.Epoch), 10), 201},
		"raw epoch above issued (any)":     {"/any/x", "9223372036854775807", 403},
		"signed token on any route":        {"/any/x", a.Token, 201},
		"token for another resource (any)": {"/any/x", other.Token, 403},
		"expired-looking garbage on any":   {"/any/x", "eyJ.eyJ.sig", 401},
	}
	for name, c := range cases {
		before := len(up.requests())
		r := g.write(t, c.path, c.token)
		if r.status != c.status {
			t.Errorf("%s: %d %s, want %d", name, r.status, r.body, c.status)
			continue
		}
		if c.status != 201 {
			r.problem(t)
			if len(up.requests()) != before {
				t.Errorf("%s reached the upstream", name)
			}
		}
	}
	// An epoch above the issued one never raised the fence.
	if e := g.fenceEpoch(t, "invoice-sweeper"); e != int64(a.Epoch) {
		t.Fatalf("fence = %d after refused epochs, want %d", e, a.Epoch)
	}
}

func decodeSegment(t *testing.T, s string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// hmacSHA256 signs msg with key: the confusion attack uses the public key
// as an HMAC secret.
func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}
