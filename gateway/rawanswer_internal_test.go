package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fencegw/fencegw/gateway/observe"
	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/gateway/reqctx"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// TestSupersededRawWriteTellsNoEpoch: a raw write admitted, then superseded
// by a newer epoch before it was forwarded, is answered 412 superseded
// without the newer epoch; a signed write's answer keeps it.
func TestSupersededRawWriteTellsNoEpoch(t *testing.T) {
	for _, c := range []struct {
		mode   policy.TokenMode
		holder string
		want   bool
	}{{policy.TokensRaw, "", false}, {policy.TokensAny, "", false}, {policy.TokensAny, "node-a", true}, {policy.TokensSigned, "node-a", true}} {
		r := httptest.NewRequest(http.MethodPost, "/w/x", nil)
		r = r.WithContext(reqctx.WithRoute(r.Context(), &policy.Route{Name: "/w/", Prefix: "/w/", Tokens: c.mode}))
		w := httptest.NewRecorder()
		a := reqctx.Admission{Resource: "r", Epoch: 5, Holder: c.holder}
		writeDrainError(w, r, a, &tokens.StaleEpochError{Resource: "r", Presented: 5, Current: 6}, observe.MustObserver())
		body := w.Body.String()
		if w.Code != http.StatusPreconditionFailed || !strings.Contains(body, problem.TypeSuperseded) ||
			strings.Contains(body, `"current_epoch":"6"`) != c.want {
			t.Errorf("%s route, holder %q: %d %s", c.mode, c.holder, w.Code, body)
		}
	}
}
