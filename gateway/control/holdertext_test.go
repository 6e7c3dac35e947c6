package control_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway/control"
	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/tokens"
	"github.com/fencegw/fencegw/tokens/boltstore"
	"github.com/fencegw/fencegw/wire"
)

// TestHolderSpelledOneWay: the red team's holder alias. encoding/json
// reads a lone surrogate escape and a byte of invalid UTF-8 as U+FFFD, so
// "node-\ud800", "node-\udfff", "node-<0xff>" and "node-\ufffd" were one
// holder: each could renew, release or take over another's grant. Bodies
// that spell a character so are refused with a 400 problem naming it,
// before any lease is touched; the lease stays its holder's.
func TestHolderSpelledOneWay(t *testing.T) {
	store, err := boltstore.Open(filepath.Join(t.TempDir(), "fencegw.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	srv := httptest.NewServer(control.NewAPI(control.Options{Fence: tokens.NewFence(store, tokens.FenceOptions{})}))
	t.Cleanup(srv.Close)
	post := func(op, body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/v1/leases/alias/"+op, "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != wire.ProblemContentType {
			t.Fatalf("%s %s: %d with Content-Type %q", op, body, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return resp.StatusCode, m
	}
	if st, m := post("acquire", `{"holder":"node-\ufffd","ttl_seconds":300}`); st != 200 {
		t.Fatalf("acquire by node-\\ufffd: %d %v", st, m)
	}
	for _, tc := range []struct{ op, body, want string }{
		{"acquire", `{"holder":"node-\ud800","ttl_seconds":300}`, "surrogate"},
		{"acquire", `{"holder":"node-\udfff","ttl_seconds":300}`, "lone low surrogate"},
		{"acquire", "{\"holder\":\"node-\xff\",\"ttl_seconds\":300}", "invalid UTF-8"},
		{"renew", "{\"holder\":\"node-\xfe\",\"epoch\":\"1\"}", "invalid UTF-8"},
		{"release", `{"holder":"node-\udfff","epoch":"1"}`, "surrogate"},
		{"release", `{"holder":"node-a","epoch":"1","x":"\ud800"}`, "surrogate"},
	} {
		st, m := post(tc.op, tc.body)
		detail, _ := m["detail"].(string)
		if st != 400 || m["type"] != problem.TypeBadRequest || !strings.Contains(detail, tc.want) {
			t.Errorf("%s %q: %d %v; want 400 %s naming %q", tc.op, tc.body, st, m, problem.TypeBadRequest, tc.want)
		}
	}
	if st, m := post("renew", `{"holder":"node-\ufffd","epoch":"1"}`); st != 200 {
		t.Fatalf("renew by the holder itself: %d %v", st, m)
	}
}
