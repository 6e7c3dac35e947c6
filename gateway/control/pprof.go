package control

import (
	"net/http"
	"net/http/pprof"

	"github.com/go-chi/chi/v5"
)

// mountPprof serves net/http/pprof under /debug/pprof/ on r: the index,
// and each profile by name (cmdline, profile, symbol and trace are the
// handlers of those names; any other name is a runtime profile such as
// heap or goroutine).
func mountPprof(r chi.Router) {
	r.Get("/debug/pprof/", pprof.Index)
	r.Get("/debug/pprof/{profile}", func(w http.ResponseWriter, r *http.Request) {
		switch name := chi.URLParam(r, "profile"); name {
		case "cmdline":
			pprof.Cmdline(w, r)
		case "profile":
			pprof.Profile(w, r)
		case "symbol":
			pprof.Symbol(w, r)
		case "trace":
			pprof.Trace(w, r)
		default:
			pprof.Handler(name).ServeHTTP(w, r)
		}
	})
}
