package control

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"path"
	"strings"

	"github.com/fencegw/fencegw/gateway/problem"

	"github.com/fencegw/fencegw/tokens"
)

// APIKey is one caller of the control API. Only the key's SHA-256 is kept.
type APIKey struct {
	// Name identifies the caller in logs, and owns the leases the key
	// acquires: only this key (or an admin key) may renew or release them,
	// or re-acquire them while live. Lease answers show it as "owner".
	Name string
	// Hash is the SHA-256 of the key.
	Hash [32]byte
	// Leases are path.Match patterns of the lease names the key may use.
	Leases []string
	// Admin keys may use every lease, whatever its owner, and the fence
	// endpoints.
	Admin bool
	// MaxLeases caps the live leases the key owns; 0: no cap of its own
	// (Options.MaxLiveLeases still applies).
	MaxLeases int
}

// APIKeys authenticates control API callers by bearer key. An empty set
// authenticates no one and lets every request through: the caller is then
// responsible for serving the control API on loopback only.
type APIKeys []APIKey

// Enabled reports whether callers must authenticate.
func (ks APIKeys) Enabled() bool { return len(ks) > 0 }

// lookup finds the key presented in the request's Authorization header.
func (ks APIKeys) lookup(r *http.Request) (*APIKey, bool) {
	scheme, secret, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return nil, false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(secret)))
	var found *APIKey
	for i := range ks {
		// Compare with every key, in constant time, so timing says nothing.
		if subtle.ConstantTimeCompare(sum[:], ks[i].Hash[:]) == 1 {
			found = &ks[i]
		}
	}
	return found, found != nil
}

// mayUseLease reports whether k may act on lease name.
func (k *APIKey) mayUseLease(name string) bool {
	if k.Admin {
		return true
	}
	for _, p := range k.Leases {
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}

// caller returns the lease caller a request authenticated as: the key's
// name and admin flag. Without keys every caller is trusted alike, as an
// anonymous admin: its grants are unowned and it may use any lease, so
// leases behave as they did before they had owners. With keys, a request
// that requireKey did not admit has no caller (false).
func (ks APIKeys) caller(r *http.Request) (tokens.Caller, bool) {
	if !ks.Enabled() {
		return tokens.Caller{Admin: true}, true
	}
	k, ok := APIKeyFrom(r.Context())
	if !ok {
		return tokens.Caller{}, false
	}
	return tokens.Caller{Name: k.Name, Admin: k.Admin}, true
}

// requireKey is middleware admitting callers whose key passes allowed. The
// admitted key is in the request's context (APIKeyFrom).
func (ks APIKeys) requireKey(allowed func(k *APIKey, r *http.Request) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !ks.Enabled() {
				next.ServeHTTP(w, r)
				return
			}
			k, ok := ks.lookup(r)
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="fencegw"`)
				problem.WriteError(w, r, problem.ErrNoAPIKey)
				return
			}
			if !allowed(k, r) {
				problem.WriteError(w, r, problem.Refuse(problem.KindForbidden, "the key "+k.Name+" may not use "+r.URL.Path))
				return
			}
			next.ServeHTTP(w, r.WithContext(withAPIKey(r.Context(), k)))
		})
	}
}

// apiKeyKey keys the request's API key in its context.
type apiKeyKey struct{}

// APIKeyFrom returns the control API key the request was authenticated
// with; none when the control API has no keys.
func APIKeyFrom(ctx context.Context) (*APIKey, bool) {
	k, ok := ctx.Value(apiKeyKey{}).(*APIKey)
	return k, ok
}

func withAPIKey(ctx context.Context, k *APIKey) context.Context {
	return context.WithValue(ctx, apiKeyKey{}, k)
}
