package gateway

import (
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/fencegw/fencegw/gateway/problem"
	"github.com/fencegw/fencegw/gateway/reqctx"

	"github.com/fencegw/fencegw/policy"
)

// Routes holds the route table in force. It can be swapped while requests
// are served; each request uses the table it started with.
type Routes struct {
	table atomic.Pointer[policy.Table]
}

// NewRoutes returns Routes serving t.
func NewRoutes(t *policy.Table) *Routes {
	r := &Routes{}
	r.table.Store(t)
	return r
}

// Swap replaces the table for requests that start afterwards.
func (r *Routes) Swap(t *policy.Table) { r.table.Store(t) }

// Table returns the table in force.
func (r *Routes) Table() *policy.Table { return r.table.Load() }

// MatchRoute is middleware that refuses methods that are not upper case,
// requests that override their method (policy.CheckMethodOverride) and
// unclean paths (400), answers 404 for paths no route serves, and
// otherwise records the matched route in the request's context for the
// middleware and proxy behind it. Matching, the resource's path segments
// and the upstream path all derive from the one decoded path it checked.
func MatchRoute(routes *Routes) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			err := policy.CheckMethod(r.Method)
			if err == nil {
				err = policy.CheckMethodOverride(r)
			}
			if err != nil {
				problem.WriteError(w, r, err)
				return
			}
			err = policy.CheckPath(r.URL.Path)
			if err == nil {
				// The path as sent is RawPath whenever it differs from Go's
				// own encoding of Path; EscapedPath ignores it when it also
				// holds a byte Go would escape (/a%2Fb/x" gives /a/b/x%22).
				err = policy.CheckEscapedPath(r.URL.RawPath)
			}
			if err == nil {
				err = policy.CheckEscapedPath(r.URL.EscapedPath())
			}
			if err != nil {
				problem.WriteError(w, r, err)
				return
			}
			rt := routes.Table().Match(r)
			if rt == nil {
				problem.WriteError(w, r, problem.Refuse(problem.KindNoRoute, fmt.Sprintf("no route for host %q and path %q", r.Host, r.URL.Path)))
				return
			}
			next.ServeHTTP(w, r.WithContext(reqctx.WithRoute(r.Context(), rt)))
		})
	}
}
