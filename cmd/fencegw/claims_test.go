package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSignedClaimNamesThroughTheBinary: issue 8, item 11, through the
// binary. A gateway signs with a key file; tokens signed with that key
// whose claims name "epoch" in another case, give it twice, or were issued
// beyond the leeway in the future are refused with 401 and never reach the
// upstream; the same claims spelled exactly, and an iat within the leeway,
// are admitted.
func TestSignedClaimNamesThroughTheBinary(t *testing.T) {
	up := newRecorder(t, http.StatusCreated)
	p, sign := signingGateway(t, up.srv.URL)

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

// TestSignedTokenWithBadResourceIs400: an authentic token whose res is not
// a valid resource name is a client error, not a store failure.
func TestSignedTokenWithBadResourceIs400(t *testing.T) {
	up := newRecorder(t, http.StatusCreated)
	p, sign := signingGateway(t, up.srv.URL)
	now := time.Now().Unix()
	signed := sign(fmt.Sprintf(`{"iss":"fencegw","aud":"fencegw","sub":"node-a","res":" padded","epoch":1,"iat":%d,"exp":%d}`, now, now+60))
	s, typ := rawExchange(t, p.proxy, rawPost("POST", "/s/x", "Fencing-Token: "+signed))
	if s != http.StatusBadRequest || typ != "urn:fencegw:problem:bad-resource" {
		t.Fatalf("token for res %q = %d %s, want 400 bad-resource", " padded", s, typ)
	}
	if got := up.lines(); len(got) != 0 {
		t.Fatalf("the upstream received %q", got)
	}
}
